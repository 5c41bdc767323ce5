extension Vault {
    /// Options for creating and opening a vault.
    ///
    /// ```swift
    /// var configuration = Vault.Configuration()
    /// configuration.kdf = .strong
    /// configuration.accessGroups = ["com.example.mail"]
    /// configuration.autoLockInterval = .seconds(300)
    /// configuration.compressionLevel = 6
    /// let vault = try Vault.open(at: url, configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The passphrase KDF cost for new vaults and passphrase changes. Existing vaults keep the cost
        /// they were created with until the passphrase changes.
        public var kdf: KDFParameters = .standard

        /// The initial size of the memory map in bytes. The map grows by itself when it fills; this
        /// only sets where it starts.
        public var initialMapSize: Int = 64 << 20

        /// The keychain access groups this vault handle may use; `nil` (the default) allows every
        /// group. Items of other groups are invisible to ``Vault/keychain``, and writing them fails
        /// with ``CofferError/Code/missingEntitlement``. The first group is the default for new items.
        public var accessGroups: [String]?

        /// Asked before values of items that require user presence are revealed. Without one, such
        /// reads fail with ``CofferError/Code/interactionNotAllowed``.
        public var authenticationHandler: AuthenticationHandler?

        /// Locks the vault after this long without keychain activity; `nil` (the default) never does.
        /// Lock the vault when your app leaves the foreground, too: this is the backstop.
        public var autoLockInterval: Duration?

        /// The zstd level for blob and snapshot chunks written without a level of their own, 1
        /// (fastest) to 19 (smallest). Levels above 3 trade write speed for size; reads are as fast.
        public var compressionLevel: Int = 3

        /// Where FastCDC cuts blob content. Keep the default unless measurements say otherwise: data
        /// written with other sizes does not deduplicate against data written with these.
        public var chunkSizes: ChunkSizes = .standard
        /// How far ahead of this machine's clock an imported record's clock stamp may be (a hybrid
        /// logical clock's maximum offset): records beyond it are refused, naming their device, and
        /// never move this vault's clock, so one device with a wrong clock cannot make its edits win
        /// over later ones for the whole group. Ten minutes by default; the CLI takes
        /// `$COFFER_MAX_CLOCK_SKEW` in seconds.
        public var maximumClockSkew: Duration = .seconds(600)

        /// The device fingerprint (``DeviceIdentity/fingerprint``) a `completeUnlessOpen` write
        /// expects the vault's write keys to be signed by; `nil` (the default) checks only that they
        /// are signed by the vault's own device key. A write-only client pins it, so a vault whose
        /// keys were replaced wholesale is refused before anything is written.
        public var expectedWriteKeyFingerprint: String?

        /// The name this device goes by in its sync group's membership log (``GroupMember/name``)
        /// when ``Vault/create(at:passphrase:configuration:)-1qlwi`` or a join makes the vault; `nil` (the
        /// default) means the host name. Ignored when opening an existing vault.
        public var deviceName: String?

        /// Default options.
        public init() {}
    }
}
