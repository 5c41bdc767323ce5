// Coffer is one product built from floors, each its own target so that the compiler refuses a
// reference upward (docs/ARCHITECTURE.md, "Floors"). Their public types are Coffer's API: `import
// Coffer` brings every one of them, as it always did.
@_exported public import CofferSync
