// What this floor stands on, re-exported so that `import Coffer` keeps showing it.
// (Built as one module, without COFFER_FLOOR_TARGETS, there is nothing to import.)
#if COFFER_FLOOR_TARGETS
@_exported public import CofferBlobs
@_exported public import CofferKeychain
@_exported public import CofferSnapshots
#endif
