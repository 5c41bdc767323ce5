import CofferTestSupport
import Foundation

@testable import Coffer

/// Builders shared by the keychain tests.
enum Items {
    static func password(
        _ service: String,
        _ account: String,
        value: String = "secret",
        accessibility: Accessibility = .whenUnlocked,
        scope: SyncScope = .deviceBound
    ) -> KeychainItem {
        var item = KeychainItem(.genericPassword, value: Data(value.utf8), accessibility: accessibility, scope: scope)
        item.attributes.service = service
        item.attributes.account = account
        return item
    }

    static func query(service: String? = nil, account: String? = nil, scope: SyncScope.Match = .any) -> ItemQuery {
        var query = ItemQuery(.genericPassword, scope: scope)
        query.attributes.service = service
        query.attributes.account = account
        return query
    }
}

extension VaultFixture {
    /// A fixture whose configuration is changed by `configure` first.
    static func configured(_ configure: (inout Vault.Configuration) -> Void) throws -> VaultFixture {
        let plain = try VaultFixture()
        var configuration = plain.configuration
        configure(&configuration)
        return VaultFixture(directory: plain.directory, configuration: configuration)
    }
}

extension Keychain {
    /// Stores `item` beside an item of the same primary key in the other scope, as an import can
    /// (a syncable item arriving while this vault holds a device-bound one of that key, or items
    /// added before a primary key named one item in either scope): ``add(_:)-1xnau`` refuses to.
    func addBesideOtherScope(_ item: KeychainItem) throws {
        let session = try KeychainSession(self)
        let prepared = try prepare(item, session: session, created: Date())
        try vault.environment.write { txn in try store(prepared, session: session, in: txn, replacing: false) }
    }
}
