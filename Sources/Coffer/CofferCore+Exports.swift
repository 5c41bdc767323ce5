// The floors under the tiers live in their own target, CofferCore, so the compiler refuses a
// reference from a floor up into a tier. Their public types (CofferError, ProtectionLevel, SyncScope,
// SecureBytes, ChunkSizes, ProcessHardening) are part of Coffer's API: `import Coffer` brings them.
@_exported public import CofferCore
@_exported public import CofferStore
