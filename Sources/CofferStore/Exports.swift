// The vault stands on CofferCore's floors; what it re-exports, `import Coffer` re-exports in turn.
@_exported public import CofferCore
