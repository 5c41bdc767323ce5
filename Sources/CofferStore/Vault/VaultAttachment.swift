/// State a tier keeps per open vault (the keychain's pooled OpenSSL contexts, say), told when the vault
/// locks and closes: the vault stands below the tiers and cannot name them, so each tier attaches
/// what it needs instead.
package protocol VaultAttachment: AnyObject, Sendable {
    /// The vault locked: drop anything derived from `whenUnlocked` keys.
    func vaultDidLock()
    /// The vault is closing: drop and wipe everything.
    func vaultWillClose()
}

/// The attachments of one vault, one per type, made on first use.
final class VaultAttachments: Sendable {
    private let attached = Locked<[ObjectIdentifier: any VaultAttachment]>([:])

    /// The attachment of type `Attachment`, made by `make` the first time.
    func attachment<Attachment: VaultAttachment>(_ make: () -> Attachment) -> Attachment {
        attached.withLock { attached in
            if let existing = attached[ObjectIdentifier(Attachment.self)] as? Attachment { return existing }
            let made = make()
            attached[ObjectIdentifier(Attachment.self)] = made
            return made
        }
    }

    /// Every attachment made so far.
    var all: [any VaultAttachment] { attached.withLock { Array($0.values) } }
}

extension Vault {
    /// The attachment of type `Attachment` for this vault, made by `make` the first time a tier asks.
    package func attachment<Attachment: VaultAttachment>(_ make: () -> Attachment) -> Attachment {
        attachments.attachment(make)
    }
}
