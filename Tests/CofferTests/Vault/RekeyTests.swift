import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// `rekey`: device-bound records move to a fresh device root, resumably, and a copy of the vault
/// taken before opens none of them (docs/FORMAT.md, "Device key generations").
@Suite("Rekey: device-bound records move to a fresh device root")
struct RekeyTests {
    let fixture: VaultFixture
    static let passphrase: Passphrase = "correct horse battery staple"

    init() throws { fixture = try VaultFixture.smallChunks() }

    /// The key epoch of every device-bound sealed record, by table, and the syncable records' bytes.
    struct SealedRecords {
        var deviceBound: [String: [KeyEpoch]] = [:]
        var syncable: [[UInt8]: [UInt8]] = [:]
        var deviceBoundRaw: [String: [[UInt8]: [UInt8]]] = [:]

        var deviceBoundEpochs: Set<KeyEpoch> { Set(deviceBound.values.joined()) }
    }

    static func sealedRecords(_ vault: Vault) throws -> SealedRecords {
        let schema = vault.schema
        return try vault.environment.read { txn in
            var records = SealedRecords()
            for (name, table) in [
                ("items", schema.items), ("blobs", schema.blobs), ("snapshots", schema.snapshots),
                ("chunks", schema.chunks),
            ] {
                // Chunk records are kept on their own or packed.
                let visit = { (body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws in
                    if name == "chunks" {
                        try schema.records.forEach(in: txn, body)
                    } else {
                        try txn.forEach(in: table, body)
                    }
                }
                try visit { key, value in
                    let scope: SealedScope
                    switch name {
                    case "items":
                        let header = try ItemRecord.Header(stored: value)
                        scope = SealedScope(header.scope, epoch: header.epoch)
                    case "chunks":
                        scope = try #require(ChunkRecord.sealedScope(of: value)).scope
                    default:
                        let header = try SealedRecord.peekHeader(value, versions: 1...4, what: name)
                        scope = SealedScope(header.scope, epoch: header.epoch)
                    }
                    if scope.scope == .deviceBound {
                        records.deviceBound[name, default: []].append(scope.epoch)
                        records.deviceBoundRaw[name, default: [:]][Array(key)] = Array(value)
                    } else {
                        records.syncable[Array(name.utf8) + Array(key)] = Array(value)
                    }
                    return true
                }
            }
            return records
        }
    }

    /// A vault holding device-bound and syncable records of every kind, both protection levels.
    func populatedVault() throws -> (Vault, tree: URL) {
        let vault = try fixture.create(passphrase: Self.passphrase)
        try vault.keychain.add(Items.password("mail", "ann", value: "device secret"))
        try vault.keychain.add(
            Items.password("wifi", "ann", value: "after first unlock", accessibility: .afterFirstUnlock)
        )
        try vault.keychain.add(Items.password("shared", "ann", value: "syncable", scope: .syncable))
        var local = BlobWriteOptions()
        local.scope = .deviceBound
        try vault.blobs.write("local.bin", data: Content.mixed(3 << 20, seed: 21), options: local)
        local.protection = .whenUnlocked
        try vault.blobs.write("locked.bin", data: Content.mixed(1 << 20, seed: 22), options: local)
        try vault.blobs.write("shared.bin", data: Content.mixed(1 << 20, seed: 23))
        let tree = fixture.directory.path("tree")
        try FileManager.default.createDirectory(
            at: tree.appendingPathComponent("docs"),
            withIntermediateDirectories: true
        )
        try Data("hello\n".utf8).write(to: tree.appendingPathComponent("docs/hello.txt"))
        try Data(Content.mixed(600 << 10, seed: 24)).write(to: tree.appendingPathComponent("big.bin"))
        _ = try vault.snapshots.backup(directory: tree, name: "local", scope: .deviceBound)
        _ = try vault.snapshots.backup(directory: tree, name: "shared")
        return (vault, tree)
    }

    func expectContents(_ vault: Vault, tree: URL) throws {
        #expect(try vault.keychain.password(service: "mail", account: "ann") == "device secret")
        #expect(try vault.keychain.password(service: "wifi", account: "ann") == "after first unlock")
        #expect(try vault.keychain.password(service: "shared", account: "ann") == "syncable")
        #expect(try vault.blobs.data("local.bin") == Data(Content.mixed(3 << 20, seed: 21)))
        #expect(try vault.blobs.data("locked.bin") == Data(Content.mixed(1 << 20, seed: 22)))
        #expect(try vault.blobs.data("shared.bin") == Data(Content.mixed(1 << 20, seed: 23)))
        let restored = fixture.directory.path("restored-\(UUID().uuidString)")
        _ = try vault.snapshots.restore("local", to: restored)
        #expect(
            try Data(contentsOf: restored.appendingPathComponent("big.bin")) == Data(Content.mixed(600 << 10, seed: 24))
        )
        #expect(try String(contentsOf: restored.appendingPathComponent("docs/hello.txt"), encoding: .utf8) == "hello\n")
        let report = try vault.blobs.verify(readingData: true)
        #expect(report.isHealthy, "\(report.problems)")
    }

    @Test("Every device-bound record moves to the new generation; syncable ones are untouched; all still read")
    func rekeyMovesDeviceBoundRecords() throws {
        let (vault, tree) = try populatedVault()
        let oldRecovery = try vault.recoveryKey()
        let before = try Self.sealedRecords(vault)
        #expect(before.deviceBoundEpochs == [.original])
        #expect(before.deviceBound["chunks"]?.count ?? 0 > 10, "several chunks to move")
        var reports: [RekeyProgress] = []
        let recovery = try vault.rekey(passphrase: Self.passphrase) { reports.append($0) }
        #expect(recovery.text != oldRecovery.text)
        #expect(try vault.recoveryKey().text == recovery.text)
        #expect(try !vault.isRekeyInProgress)

        let after = try Self.sealedRecords(vault)
        let generation = try vault.keyRing().currentEpoch(.device)
        #expect(!generation.isOriginal)
        #expect(after.deviceBoundEpochs == [generation])
        #expect(after.deviceBound.mapValues(\.count) == before.deviceBound.mapValues(\.count), "ids kept, none lost")
        #expect(after.syncable == before.syncable, "syncable records are not rewritten")
        let last = try #require(reports.last)
        #expect(last.examined == last.total && last.resealed == before.deviceBound.values.joined().count)
        try expectContents(vault, tree: tree)

        // New device-bound records go to the new generation; everything reopens and unlocks with the
        // passphrase and the new recovery key; the old recovery key no longer opens the vault.
        try vault.keychain.add(Items.password("later", "ann", value: "after the rekey"))
        vault.close()
        let reopened = try fixture.open()
        try reopened.unlock(passphrase: Self.passphrase)
        #expect(reopened.formatVersion == Schema.packedFormatVersion, "3 for the rekey, 6 for its packs")
        try expectContents(reopened, tree: tree)
        #expect(try reopened.keychain.password(service: "later", account: "ann") == "after the rekey")
        #expect(try Self.sealedRecords(reopened).deviceBoundEpochs == [generation])
        reopened.lock()
        let refused = #expect(throws: CofferError.self) { try reopened.unlock(recoveryKey: oldRecovery) }
        #expect(refused?.code == .authFailed)
        try reopened.unlock(recoveryKey: recovery)
        try expectContents(reopened, tree: tree)
        reopened.close()
    }

    @Test(
        "A copy taken before the rekey, with its roots and old recovery key, opens nothing re-sealed or written since"
    )
    func copyBeforeRekey() throws {
        let (vault, _) = try populatedVault()
        let oldRecovery = try vault.recoveryKey()
        vault.close()
        let copyURL = fixture.directory.path("copy")
        try FileManager.default.copyItem(at: fixture.vaultURL, to: copyURL)
        let reopened = try fixture.open()
        try reopened.unlock(passphrase: Self.passphrase)
        let newPassphrase: Passphrase = "a passphrase never written down"
        try reopened.rekey(passphrase: Self.passphrase, newPassphrase: newPassphrase)
        try reopened.keychain.add(Items.password("later", "ann", value: "after the rekey"))
        let after = try Self.sealedRecords(reopened)
        let generation = try reopened.keyRing().currentEpoch(.device)
        reopened.close()

        // The thief holds the old files, the old passphrase and the old recovery key.
        let copy = try Vault.open(at: copyURL, configuration: fixture.configuration)
        try copy.unlock(passphrase: Self.passphrase)
        let stolen = try copy.keyRing()
        #expect(throws: CofferError.self) { _ = try stolen.root(.device, epoch: generation) }
        let cipher = try AESGCM()
        for (name, records) in after.deviceBoundRaw {
            for (key, value) in records {
                // Not a check it could skip: no key the copy holds opens the re-sealed bytes.
                let opened = value.withUnsafeBytes { (stored) -> Bool in
                    switch name {
                    case "items":
                        guard let header = try? ItemRecord.Header(stored: stored) else { return true }
                        return ProtectionLevel.allCases.contains { level in
                            guard let itemKey = try? stolen.key(.item, .device, level, epoch: .original) else {
                                return false
                            }
                            return (try? ItemRecord.open(stored, id: key, header: header, key: itemKey, cipher: cipher))
                                != nil
                        }
                    case "chunks":
                        return ProtectionLevel.allCases.contains { level in
                            guard let keys = try? ChunkKeys(scope: .deviceBound, level: level, write: nil, keys: stolen)
                            else {
                                return false
                            }
                            return (try? keys.sealingKey(for: ChunkID(key), epoch: generation)) != nil
                        }
                    default:
                        return
                            (try? SealedRecord.open(
                                stored,
                                versions: 1...3,
                                label: name == "blobs" ? BlobManifest.label : SnapshotRecord.label,
                                id: key,
                                keys: stolen,
                                cipher: cipher,
                                what: name
                            )) != nil
                    }
                }
                #expect(!opened, "\(name) record \(key.prefix(4)) opened with the stolen keys")
            }
        }
        copy.close()
        // Nor do the old passphrase or recovery key open the new files.
        let current = try fixture.open()
        let wrongPassphrase = #expect(throws: CofferError.self) { try current.unlock(passphrase: Self.passphrase) }
        #expect(wrongPassphrase?.code == .authFailed)
        let wrongRecovery = #expect(throws: CofferError.self) { try current.unlock(recoveryKey: oldRecovery) }
        #expect(wrongRecovery?.code == .authFailed)
        try current.unlock(passphrase: newPassphrase)
        #expect(try current.keychain.password(service: "later", account: "ann") == "after the rekey")
        current.close()
    }

    @Test("An interrupted rekey leaves a vault that reads everything, and the next run ends the same generation")
    func interruptedRekeyResumes() throws {
        let (vault, tree) = try populatedVault()
        let generation = try vault.beginRekey()
        // Part of the pass: the items only, as a run killed after its first batches would leave it.
        try vault.keychain.add(Items.password("during", "ann", value: "written during the rekey"))
        vault.close()

        let reopened = try fixture.open()
        try reopened.unlock(passphrase: Self.passphrase)
        #expect(try reopened.isRekeyInProgress)
        #expect(try reopened.keyRing().currentEpoch(.device) == generation, "new records go to the pending generation")
        #expect(try Self.sealedRecords(reopened).deviceBoundEpochs == [.original, generation])
        try expectContents(reopened, tree: tree)
        #expect(try reopened.keychain.password(service: "during", account: "ann") == "written during the rekey")
        // A wrong passphrase is refused before anything changes.
        let before = try reopened.dumpTables()
        let refused = #expect(throws: CofferError.self) { try reopened.rekey(passphrase: "not the passphrase") }
        #expect(refused?.code == .authFailed)
        #expect(try reopened.dumpTables() == before)

        try reopened.rekey(passphrase: Self.passphrase)
        #expect(try !reopened.isRekeyInProgress)
        #expect(try reopened.keyRing().currentEpoch(.device) == generation)
        #expect(try Self.sealedRecords(reopened).deviceBoundEpochs == [generation])
        try expectContents(reopened, tree: tree)

        // A second rekey starts another generation and keeps every earlier root for ids and stragglers.
        try reopened.rekey(passphrase: Self.passphrase)
        let third = try reopened.keyRing().currentEpoch(.device)
        #expect(third != generation && !third.isOriginal)
        reopened.close()
        let last = try fixture.open()
        try last.unlock(passphrase: Self.passphrase)
        #expect(try Self.sealedRecords(last).deviceBoundEpochs == [third])
        try expectContents(last, tree: tree)
        #expect(try last.keychain.password(service: "during", account: "ann") == "written during the rekey")
        last.close()
    }

    @Test("Secrets sealed under the device root are not written with a root another process rekeyed away")
    func staleRootsRefused() throws {
        let vault = try fixture.create(passphrase: Self.passphrase)
        defer { vault.close() }
        let stale = try vault.unlockedRoots()
        try vault.rekey(passphrase: Self.passphrase)
        let schema = vault.schema
        let refused = #expect(throws: CofferError.self) {
            try vault.environment.write { txn in
                try DeviceGenerations.checkCurrent(stale.deviceGeneration, in: txn, schema: schema)
            }
        }
        #expect(refused?.code == .interactionNotAllowed)
        #expect(refused?.message.contains("another process rekeyed this vault") == true)
        let current = try vault.unlockedRoots()
        try vault.environment.write { txn in
            try DeviceGenerations.checkCurrent(current.deviceGeneration, in: txn, schema: schema)
        }
    }
}
