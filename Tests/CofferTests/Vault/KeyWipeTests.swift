import Foundation
import Testing

@testable import Coffer

/// Keys are destroyed, not merely forgotten (issue 8): after `lock()` every root and `whenUnlocked`
/// key has been wiped to zeros and freed, with the `afterFirstUnlock` keys still alive; after
/// `close()` every key has gone the same way. A key some cache still held would never be wiped, and
/// these tests would name its level.
@Suite("Keys: lock() wipes the roots and whenUnlocked keys, close() wipes the rest", .serialized)
struct KeyWipeTests {
    /// The identities of the keys the vault holds now, by level (`nil` for the roots), holding none.
    static func keyIdentities(_ vault: Vault) throws -> [(level: ProtectionLevel?, id: ObjectIdentifier)] {
        try vault.keyRing().heldKeys.map { ($0.level, ObjectIdentifier($0.key)) }
    }

    /// A vault that has been used through every tier, so any cache of keys has been filled.
    static func usedVault(_ fixture: VaultFixture) throws -> Vault {
        let vault = try fixture.create()
        for accessibility in [Accessibility.whenUnlocked, .afterFirstUnlock] {
            try vault.keychain.add(
                Items.password("s", accessibility.rawValue, value: "v", accessibility: accessibility)
            )
            #expect(try vault.keychain.password(service: "s", account: accessibility.rawValue) == "v")
        }
        for protection in ProtectionLevel.allCases {
            let content = Content.mixed(300_000, seed: 7)
            try vault.blobs.write(
                protection.rawValue,
                data: Data(content),
                options: BlobWriteOptions(protection: protection)
            )
            #expect(try vault.blobs.data(protection.rawValue) == Data(content))
        }
        return vault
    }

    /// The wipes seen while `action` runs and until every key of `expected` has been wiped (at most
    /// 10 s): pipeline workers of an operation that has returned may let go of their keys a moment
    /// later, under load, and a key is wiped when the last holder lets go.
    static func wipes(during action: () -> Void, awaiting expected: Set<ObjectIdentifier>) -> [ObjectIdentifier: Bool] {
        SecureBytes.witnessingWipes { witness in
            action()
            let deadline = Date().addingTimeInterval(10)
            while !expected.isSubset(of: witness.wipes.keys), Date() < deadline { usleep(10_000) }
            return witness.wipes
        }
    }

    @Test("lock() wipes and frees the roots and every whenUnlocked key; afterFirstUnlock keys survive it")
    func lockWipes() throws {
        let fixture = try VaultFixture()
        let vault = try Self.usedVault(fixture)
        let held = try Self.keyIdentities(vault)
        let dropped = Set(held.filter { $0.level != .afterFirstUnlock }.map(\.id))
        let kept = Set(held.filter { $0.level == .afterFirstUnlock }.map(\.id))
        #expect(dropped.count >= 2 && !kept.isEmpty)

        let wipes = Self.wipes(during: { vault.lock() }, awaiting: dropped)
        let missed = held.filter { dropped.contains($0.id) && wipes[$0.id] != true }
        #expect(missed.isEmpty, "not wiped at lock: \(missed.map { $0.level?.rawValue ?? "root" })")
        #expect(kept.allSatisfy { wipes[$0] == nil }, "an afterFirstUnlock key was wiped at lock")
        #expect(throws: KeychainError.self) { _ = try vault.keychain.password(service: "s", account: "whenUnlocked") }
        #expect(try vault.keychain.password(service: "s", account: "afterFirstUnlock") == "v")
        vault.close()
    }

    @Test("close() wipes and frees every key the vault held")
    func closeWipes() throws {
        let fixture = try VaultFixture()
        let vault = try Self.usedVault(fixture)
        let held = try Self.keyIdentities(vault)
        let wipes = Self.wipes(during: { vault.close() }, awaiting: Set(held.map(\.id)))
        let missed = held.filter { wipes[$0.id] != true }
        #expect(missed.isEmpty, "not wiped at close: \(missed.map { $0.level?.rawValue ?? "root" })")
    }
}
