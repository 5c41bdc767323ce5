extension Vault {
    /// Options for creating and opening a vault.
    ///
    /// ```swift
    /// var configuration = Vault.Configuration()
    /// configuration.kdf = .strong
    /// let vault = try Vault.create(at: url, passphrase: passphrase, configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The passphrase KDF cost for new vaults and passphrase changes. Existing vaults keep the cost
        /// they were created with until the passphrase changes.
        public var kdf: KDFParameters = .standard

        /// The initial size of the memory map in bytes. The map grows by itself when it fills; this
        /// only sets where it starts.
        public var initialMapSize: Int = 64 << 20

        /// Default options.
        public init() {}
    }
}
