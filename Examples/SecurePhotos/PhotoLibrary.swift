import Coffer
import Foundation

/// The app's model: one person's account and photos in a Coffer vault.
///
/// - The account's credentials (a user name and a service token) are a keychain item that requires
///   user presence: the vault hands out the token only after the passphrase is given again.
/// - Photos are blobs under `photos/`, sealed `whenUnlocked`: once the vault locks (by hand or after
///   idle time), reading them needs the passphrase.
/// - Each photo has its details (size and when it was added) in a keychain item under
///   ``detailsService``, written in the same transaction as the photo: no reader, sync peer or crash
///   ever sees one without the other.
/// - All of these are syncable, so a bundle carries them to the person's other machine; the app's
///   settings item is device-bound and stays.
final class PhotoLibrary: Sendable {
    /// The keychain service the account item lives under.
    static let service = "SecurePhotos"
    /// Where photos live in the blob tier.
    static let photoPrefix = "photos/"
    /// The keychain service of each photo's details (its account is the photo's name).
    static let detailsService = "SecurePhotos.photo"

    /// What the app records about a photo beside its bytes.
    struct Details: Codable, Equatable {
        var size: Int64
        var added: Date
    }

    let vault: Vault

    private init(vault: Vault) { self.vault = vault }

    /// Options every vault of the app is opened with: idle lock, and a handler that asks for the
    /// passphrase before the credentials are revealed.
    static func configuration(
        idleLock: Duration?,
        confirm: @escaping @Sendable (String) -> String?
    ) -> Vault.Configuration {
        var configuration = Vault.Configuration()
        configuration.autoLockInterval = idleLock
        configuration.authenticationHandler = { request in
            guard let answer = confirm(request.reason), !answer.isEmpty else { return .canceled }
            // Checks the passphrase against the vault's without unlocking or changing anything.
            return (try? request.passphrase.check(Passphrase(answer))) == true ? .granted : .failed
        }
        if let cost = ProcessInfo.processInfo.environment["SECURE_PHOTOS_KDF"], cost == "fast" {
            configuration.kdf = .insecureFastForTesting  // for the tests only
        }
        return configuration
    }

    /// Creates the vault and the account in it.
    static func createAccount(
        at directory: URL,
        user: String,
        passphrase: Passphrase,
        configuration: Vault.Configuration
    ) throws(CofferError) -> PhotoLibrary {
        let vault = try Vault.create(at: directory, passphrase: passphrase, configuration: configuration)
        var account = KeychainItem(
            .genericPassword,
            value: Data(
                SecureBytes.random(count: 16).withUnsafeBytes { $0.map { String(format: "%02x", $0) } }.joined().utf8
            ),
            accessibility: .whenUnlocked,
            scope: .syncable,
            requiresUserPresence: true
        )
        account.attributes.service = service
        account.attributes.account = user
        account.attributes.label = "SecurePhotos account"
        do {
            try vault.keychain.add(account)
            try vault.keychain.setPassword("grid", service: "SecurePhotos.settings", account: "layout")
        } catch {
            vault.close()
            throw error
        }
        return PhotoLibrary(vault: vault)
    }

    /// Logs in: opens the vault and unlocks it with the passphrase.
    static func logIn(
        at directory: URL,
        passphrase: Passphrase,
        configuration: Vault.Configuration
    ) throws(CofferError) -> PhotoLibrary {
        let vault = try Vault.open(at: directory, configuration: configuration)
        do {
            try vault.unlock(passphrase: passphrase)
        } catch {
            vault.close()
            throw error
        }
        return PhotoLibrary(vault: vault)
    }

    /// Joins the person's sync group from a bundle made on their other machine.
    static func join(
        bundle: URL,
        at directory: URL,
        passphrase: Passphrase,
        configuration: Vault.Configuration
    ) throws(CofferError) -> PhotoLibrary {
        let (vault, _) = try Vault.join(
            bundle: bundle,
            at: directory,
            passphrase: passphrase,
            configuration: configuration
        )
        return PhotoLibrary(vault: vault)
    }

    /// The account's user name (an attribute, readable without presence).
    func userName() throws(CofferError) -> String {
        var query = ItemQuery(.genericPassword, limit: .one)
        query.attributes.service = Self.service
        guard let user = try vault.keychain.find(query).first?.attributes.account else {
            throw CofferError(.itemNotFound, "this vault has no SecurePhotos account")
        }
        return user
    }

    /// The account's token: asks the authentication handler first.
    func token() throws(CofferError) -> String {
        var query = ItemQuery(.genericPassword, limit: .one)
        query.attributes.service = Self.service
        query.returnsValue = true
        guard let value = try vault.keychain.find(query).first?.value else {
            throw CofferError(.itemNotFound, "this vault has no SecurePhotos account")
        }
        return String(decoding: value, as: UTF8.self)
    }

    /// Stores the image file at `url` under its file name, with its details, in one transaction;
    /// returns that name.
    @discardableResult
    func add(_ url: URL) throws -> String {
        let name = url.lastPathComponent
        let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int64 ?? 0
        try vault.write { transaction in
            try transaction.blobs.write(
                Self.photoPrefix + name,
                contentsOf: url,
                options: BlobWriteOptions(scope: .syncable, protection: .whenUnlocked)
            )
            try transaction.keychain.set(
                Details(size: size, added: Date()),
                for: KeychainKey(service: Self.detailsService, account: name),
                accessibility: .whenUnlocked,
                scope: .syncable
            )
        }
        return name
    }

    /// Photos without details and details without a photo: none, unless the vault was damaged.
    func inconsistencies() throws(CofferError) -> [String] {
        let photos = Set(try photos().map(\.name))
        var query = ItemQuery(.genericPassword)
        query.attributes.service = Self.detailsService
        let detailed = Set(try vault.keychain.items(matching: query).compactMap(\.attributes.account))
        return photos.subtracting(detailed).sorted().map { "photo \($0) has no details" }
            + detailed.subtracting(photos).sorted().map { "details of \($0) have no photo" }
    }

    /// The photos, by name, with their sizes.
    func photos() throws(CofferError) -> [(name: String, size: Int64)] {
        try vault.blobs.list().filter { $0.name.hasPrefix(Self.photoPrefix) }.map {
            (String($0.name.dropFirst(Self.photoPrefix.count)), $0.size)
        }
    }

    /// Writes the photo `name` to `url`.
    func export(_ name: String, to url: URL) throws(CofferError) {
        try vault.blobs.read(Self.photoPrefix + name, to: url)
    }

    /// Writes the syncable part of the library (account and photos) to a bundle for another machine.
    func exportBundle(to url: URL) throws(CofferError) -> ExportSummary {
        try vault.export(to: url)
    }

    /// Unlocks again after a lock.
    func unlock(_ passphrase: Passphrase) throws(CofferError) { try vault.unlock(passphrase: passphrase) }
}
