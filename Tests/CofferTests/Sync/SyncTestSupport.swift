import CofferTestSupport
import Foundation

@testable import Coffer

/// Vaults of one sync group on one machine, and ways to look inside them and their bundles.
struct SyncGroupFixture {
    let fixture: VaultFixture
    static let passphrase: Passphrase = "correct horse battery staple"

    init(smallChunks: Bool = true) throws {
        fixture = smallChunks ? try VaultFixture.smallChunks() : try VaultFixture()
    }

    var directory: TemporaryDirectory { fixture.directory }

    /// The first vault of the group.
    func createFirst() throws -> Vault { try fixture.create(passphrase: Self.passphrase) }

    /// A new vault that joins from `bundle`.
    func join(_ name: String, from bundle: URL) throws -> (Vault, ImportSummary) {
        try Vault.join(
            bundle: bundle,
            at: directory.path(name),
            passphrase: Self.passphrase,
            configuration: fixture.configuration
        )
    }

    /// A write-only client's blob `name` of `content`, dropped into the group's first vault (closed),
    /// opened without its passphrase.
    func dropWriteOnlyBlob(_ name: String, _ content: [UInt8]) throws {
        let client = try fixture.open()
        defer { client.close() }
        try client.blobs.write(name, data: content, options: BlobWriteOptions(protection: .completeUnlessOpen))
    }

    /// A fresh bundle path.
    func bundle(_ name: String) -> URL { directory.path(name + ".bundle") }

    /// A syncable password item of account "ann".
    static func password(_ service: String, _ value: String = "secret") -> KeychainItem {
        Items.password(service, "ann", value: value, scope: .syncable)
    }

    /// Exports `from` to the bundle `name` and imports it into `to`.
    func exchange(_ from: Vault, _ to: Vault, _ name: String) throws -> ImportSummary {
        let url = bundle(name)
        try from.export(to: url)
        return try to.import(from: url)
    }
}

extension Vault {
    /// Replaces every syncable chunk record in this vault (a modified client's own files) with one
    /// it seals, with the group's keys it holds, under the same id and level: `forge` gives the
    /// plaintext from the genuine one. (A write-only client's chunks are left as they are: their keys
    /// are agreed per write, and records forged before stay as they are.) Returns how many it
    /// replaced.
    @discardableResult
    func forgeChunkRecords(_ forge: ([UInt8]) -> [UInt8]) throws -> Int {
        let schema = schema
        let keys = try keyRing()
        let coder = try ChunkRecord.Coder()
        var namespaces: [UInt8: ChunkKeys] = [:]
        return try environment.write { txn in
            var genuine: [(ChunkID, [UInt8], ProtectionLevel)] = []
            try schema.records.forEach(in: txn) { key, value in
                if BundleExporter<DataSink>.scope(ofChunk: value) == .syncable,
                    let level = ProtectionLevel(code: value[2]),
                    !level.isSealedToClassKey
                {
                    genuine.append((try ChunkID(stored: Array(key)), Array(value), level))
                }
                return true
            }
            var replaced = 0
            for (id, record, level) in genuine {
                let chunkKeys =
                    try namespaces[record[2]] ?? ChunkKeys(scope: .syncable, level: level, write: nil, keys: keys)
                namespaces[record[2]] = chunkKeys
                // One forged before no longer opens as the chunk: it stays as it is.
                guard
                    let plaintext = try? record.withUnsafeBytes({
                        try ChunkRecord.open($0, id: id, keys: chunkKeys, coder: coder)
                    })
                else { continue }
                let forged = try forge(plaintext).withUnsafeBytes {
                    try ChunkRecord.seal($0, id: id, keys: chunkKeys, coder: coder)
                }
                try schema.records.put(id, forged, in: txn)
                replaced += 1
            }
            return replaced
        }
    }

    /// Every table's entries, for "nothing changed" checks; meta `seen …` entries (when a device's
    /// bundle was last imported, a clock reading) aside.
    func dumpTables() throws -> [String: [[UInt8]: [UInt8]]] {
        let schema = schema
        var tables: [(String, Table)] = [
            ("meta", schema.meta), ("items", schema.items), ("itemIndex", schema.itemIndex),
            ("chunks", schema.chunks), ("chunkRefs", schema.chunkRefs), ("blobs", schema.blobs),
            ("snapshots", schema.snapshots), ("pending", schema.pending), ("changes", schema.changes),
            ("versions", schema.versions), ("peers", schema.peers),
        ]
        // The tables of packed records, made at the first unlock of a vault older than them, count
        // as empty until then.
        if let packs = schema.packs {
            tables += zip(ChunkPackTables.names, [packs.locators, packs.packs, packs.usage]).map { ($0, $1) }
        }
        return try environment.read { txn in
            var dump: [String: [[UInt8]: [UInt8]]] = [:]
            for (name, table) in tables {
                var entries: [[UInt8]: [UInt8]] = [:]
                try txn.forEach(in: table) { key, value in
                    if name != "meta" || !key.starts(with: Array(Vault.seenPrefix.utf8)) {
                        entries[Array(key)] = Array(value)
                    }
                    return true
                }
                dump[name] = entries
            }
            for name in ChunkPackTables.names where dump[name]?.isEmpty ?? true { dump[name] = nil }
            return dump
        }
    }

    /// The syncable state: every version entry and every syncable record as stored, which vaults of a
    /// group that have seen the same changes hold byte for byte.
    func syncableState() throws -> [[UInt8]: [UInt8]] {
        let schema = schema
        return try environment.read { txn in
            var state: [[UInt8]: [UInt8]] = [:]
            try txn.forEach(in: schema.versions) { key, value in
                state[[0] + Array(key)] = Array(value)
                return true
            }
            for (tag, table, kind) in [
                (UInt8(1), schema.items, SyncRecordKind.item), (2, schema.blobs, .blob),
                (3, schema.snapshots, .snapshot),
            ] {
                try txn.forEach(in: table) { key, value in
                    if BundleExporter<DataSink>.scope(of: kind, stored: value) == .syncable {
                        state[[tag] + Array(key)] = Array(value)
                    }
                    return true
                }
            }
            return state
        }
    }

    /// The plaintext of a bundle's stream, opened with this vault's sync root.
    func bundlePlaintext(_ url: URL) throws -> [UInt8] {
        var source = DataSource(try Data(contentsOf: url))
        let (header, headerBytes) = try BundleHeader.read(from: &source)
        var reader = try BundleStreamReader(
            source: source,
            header: header,
            headerBytes: headerBytes,
            key: try header.streamKey(syncRoot: try unlockedRoots().sync)
        )
        var plaintext: [UInt8] = []
        while true {
            let piece = try reader.read(upTo: 1 << 20)
            if piece.isEmpty { break }
            plaintext += piece
        }
        return plaintext
    }

    /// The keys of this vault's device-bound records and chunks: none may appear in a bundle.
    func deviceBoundIDs() throws -> [[UInt8]] {
        let schema = schema
        return try environment.read { txn in
            var ids: [[UInt8]] = []
            for (table, kind) in [
                (schema.items, SyncRecordKind.item), (schema.blobs, .blob), (schema.snapshots, .snapshot),
            ] {
                try txn.forEach(in: table) { key, value in
                    if BundleExporter<DataSink>.scope(of: kind, stored: value) == .deviceBound {
                        ids.append(Array(key))
                    }
                    return true
                }
            }
            try schema.records.forEach(in: txn) { key, value in
                if BundleExporter<DataSink>.scope(ofChunk: value) == .deviceBound { ids.append(Array(key)) }
                return true
            }
            return ids
        }
    }
}

extension GroupContext {
    /// A modified client: starts, on this log, an epoch under `epoch` (the id of a real epoch, read
    /// from any bundle header) with a key of its own, sealed to every member this device knows, and
    /// holds that key. Returns the key.
    @discardableResult
    mutating func forgeEpoch(_ epoch: KeyEpoch) throws -> SecureBytes {
        let forged = SecureBytes.random(count: 32)
        var boxes: [UUID: [UInt8]] = [:]
        for member in try state().activeMembers {
            boxes[member.device] = try GroupKeys.box(forged, epoch: epoch, to: member.keys, group: log.group)
        }
        let history = try GroupKeys.sealHistory(roots, under: forged, epoch: epoch, group: log.group)
        try append(.epochStarted(epoch: epoch, boxes: boxes, history: history))
        learnKeys(from: log)  // its own box
        return forged
    }
}

extension Vault {
    /// ``GroupContext/forgeEpoch(_:)`` on this vault's group, stored.
    @discardableResult
    func forgeEpoch(_ epoch: KeyEpoch) throws -> SecureBytes {
        try changeGroup("forging an epoch") { context, _, _ in try context.forgeEpoch(epoch) }
    }
}

extension GroupContext {
    /// Outsiders who read this log from a bundle's clear header make up `count` device ids: each
    /// joins with a proof made with a random key (and, with `closing`, then switches the group to
    /// approval-only joins). Returns this log with their entries.
    func withOutsiders(_ count: Int, closing: Bool) throws -> GroupLog {
        var crafted = log
        let epoch = try state().currentEpoch
        for index in 0..<count {
            var outsider = try GroupContext(
                log: log,
                roots: roots.merging([epoch: SecureBytes.random(count: 32)]) { $1 },
                device: UUID(),
                deviceKeys: DeviceKeys.generate()
            )
            try outsider.appendJoined(name: "o\(index)")
            if closing { try outsider.append(.policy(.approval)) }
            let held = Set(crafted.entries.map(\.hash))
            crafted = GroupLog(
                group: log.group,
                entries: crafted.entries + outsider.log.entries.filter { !held.contains($0.hash) }
            )
        }
        return crafted
    }
}

extension Vault {
    /// A modified client on a member's stolen copy: signs a chain of valid policy entries until its
    /// log holds `total` entries, and keeps that log (red team round 4, N2).
    func floodGroupLog(to total: Int) throws {
        try changeGroup("flooding the log") { context, _, _ in
            var entries = context.log.entries
            var parents = context.log.heads
            while entries.count < total {
                let entry = try GroupEntry(
                    change: .policy(.passphrase),
                    parents: parents,
                    author: deviceID,
                    signing: context.deviceKeys.signing,
                    group: context.log.group,
                    time: Date(timeIntervalSince1970: 1_800_000_000 + Double(entries.count))
                )
                entries.append(entry)
                parents = [entry.hash]
            }
            context.adopt(GroupLog(group: context.log.group, entries: entries))
        }
    }
}

extension SyncGroupFixture {
    /// The files and passphrase of `vault` (made as `name`) leak: returns its owner's vault, which
    /// does `beforeRekey`, then rekeys with a new passphrase, and the leaked copy, opened and unlocked
    /// with the old one.
    func leakThenRekey(
        _ vault: Vault,
        name: String,
        beforeRekey: (Vault) throws -> Void = { _ in }
    ) throws -> (owner: Vault, leak: Vault) {
        vault.close()
        let leakDirectory = directory.path(name + "-leaked")
        try FileManager.default.copyItem(at: directory.path(name), to: leakDirectory)
        let owner = try Vault.open(at: directory.path(name), configuration: fixture.configuration)
        try owner.unlock(passphrase: Self.passphrase)
        try beforeRekey(owner)
        try owner.rekey(passphrase: Self.passphrase, newPassphrase: "a brand new passphrase")
        let leak = try Vault.open(at: leakDirectory, configuration: fixture.configuration)
        try leak.unlock(passphrase: Self.passphrase)
        return (owner, leak)
    }
}
