@_exported public import CofferBlobs
// What this floor stands on, re-exported so that `import Coffer` keeps showing it.
@_exported public import CofferKeychain
@_exported public import CofferSnapshots
