// Coffer is one product built from floors, each its own target so that the compiler refuses a
// reference upward (docs/ARCHITECTURE.md, "Floors"). Their public types are Coffer's API: `import
// Coffer` brings every one of them, as it always did.
// (Built as one module, without COFFER_FLOOR_TARGETS, there is nothing to import.)
#if COFFER_FLOOR_TARGETS
@_exported public import CofferSync
#endif
