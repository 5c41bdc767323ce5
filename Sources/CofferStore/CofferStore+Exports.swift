// The vault stands on CofferCore's floors; what it re-exports, `import Coffer` re-exports in turn.
// (Built as one module, without COFFER_FLOOR_TARGETS, there is nothing to import.)
#if COFFER_FLOOR_TARGETS
@_exported public import CofferCore
#endif
