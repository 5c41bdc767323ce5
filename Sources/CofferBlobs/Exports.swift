// What this floor stands on, re-exported so that `import Coffer` keeps showing it.
@_exported public import CofferContent
