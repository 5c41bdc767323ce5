public import Foundation

extension GroupReference {
    /// The group a bundle belongs to, read from its clear header: what a device that asks to join by
    /// approval names in its request (``Vault/requestJoin(at:passphrase:name:group:configuration:)-51kop``).
    /// Compare the fingerprint with the one a member shows (``Vault/groupReference()-4zjb9``): anyone can
    /// make a bundle that claims a group's id, not one with its fingerprint.
    ///
    /// - Throws: ``CofferError`` `.param` for a format-1 bundle (it carries no membership log),
    ///   `.decode` for a damaged one, `.notTrusted` for a log that is not one group's.
    public init(bundle: URL) throws(CofferError) {
        let file = try InputFile(path: bundle.path)
        var source = FileDescriptorSource(descriptor: file.descriptor)
        let header = try BundleHeader.read(from: &source).0
        guard !header.log.isEmpty else {
            throw CofferError(
                .param,
                "the bundle \(bundle.path) carries no membership log (format version 1): export one again from an up-to-date member"
            )
        }
        try self.init(log: try GroupLog(group: header.syncGroupID, decoding: header.log))
    }
}
