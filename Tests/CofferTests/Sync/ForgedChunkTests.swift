import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// A member holds the group's keys, so a modified client can sign a bundle that seals anything under
/// another device's chunk ids. Every chunk record a bundle carries is checked against its id before
/// the import keeps it (``ArrivingChunkCheck``; red team round 41, F1): such a bundle is refused,
/// naming its device, and the genuine record, arriving later, is the one kept.
@Suite("Forged chunk records: a bundle that seals other content under a chunk's id is refused")
struct ForgedChunkTests {
    let group: SyncGroupFixture

    init() throws { group = try SyncGroupFixture() }

    /// Replaces every syncable chunk record in `vault` (a modified client's own files) with what
    /// `forge` makes of it.
    func replaceChunks(in vault: Vault, _ forge: ([UInt8]) -> [UInt8]) throws -> Int {
        let schema = vault.schema
        return try vault.environment.write { txn in
            var genuine: [([UInt8], [UInt8])] = []
            try schema.records.forEach(in: txn) { key, value in
                if BundleExporter<DataSink>.scope(ofChunk: value) == .syncable {
                    genuine.append((Array(key), Array(value)))
                }
                return true
            }
            for (id, record) in genuine { try schema.records.put(ChunkID(id), forge(record), in: txn) }
            return genuine.count
        }
    }

    /// `forger`'s bundle is refused by `receiver`, naming `forger` and saying `what`, and leaves it
    /// exactly as it was.
    func expectRefused(from forger: Vault, by receiver: Vault, saying what: String) throws {
        let bundle = group.bundle("forged")
        try forger.export(to: bundle)
        let before = try receiver.dumpTables()
        let error = try #require(throws: CofferError.self) { try receiver.import(from: bundle) }
        #expect(error.code == .decode)
        #expect(error.message.contains("device \(forger.deviceID.uuidString.lowercased())"))
        #expect(error.message.contains(what))
        #expect(error.message.contains("revoke it"))
        // The chunks the import staged went into a pack before the refusal freed them, which raised
        // the vault's format for good (docs/FORMAT.md, "Versioning"); nothing else changed.
        var after = try receiver.dumpTables()
        let format = Array(MetaKey.format.utf8)
        if after["meta"]?[format] == Self.format(Schema.packedFormatVersion) {
            after["meta"]?[format] = before["meta"]?[format]
        }
        #expect(after == before)
    }

    private static func format(_ version: UInt32) -> [UInt8] { withUnsafeBytes(of: version.bigEndian) { Array($0) } }

    /// A founds the group and writes a blob after M and C joined; M pulls it from A.
    func groupWithBlob() throws -> (a: Vault, m: Vault, c: Vault, content: [UInt8]) {
        let a = try group.createFirst()
        try a.export(to: group.bundle("founding"))
        let (m, _) = try group.join("m", from: group.bundle("founding"))
        let (c, _) = try group.join("c", from: group.bundle("founding"))
        _ = try group.exchange(m, a, "m-to-a")
        _ = try group.exchange(c, a, "c-to-a")
        let content = Content.mixed(200_000, seed: 41)
        try a.blobs.write("report", data: content)
        _ = try group.exchange(a, m, "a-to-m")
        #expect(Array(try m.blobs.data("report")) == content)
        return (a, m, c, content)
    }

    @Test(
        "junk, or another content, sealed under a chunk's id is refused naming the device; the genuine record is kept",
        arguments: ["junk", "other content", "a write-only client's header"]
    )
    func forgedRecordIsRefused(forgery: String) throws {
        let (a, m, c, content) = try groupWithBlob()
        defer { for vault in [a, m, c] { vault.close() } }
        if forgery == "a write-only client's header" {
            // Random bytes behind the genuine header with its level byte set to completeUnlessOpen,
            // whose keys only a write's record gives: no record of a write has them (red team round
            // 42, F1).
            #expect(
                try replaceChunks(in: m) { record in
                    Array(record.prefix(2)) + [3] + record[3..<8] + Content.random(record.count - 8, seed: 5)
                } > 1
            )
            try expectRefused(
                from: m,
                by: c,
                saying: "sealed with a write-only client's keys, which only a record of that write has"
            )
        } else {
            let forged = try m.forgeChunkRecords { plaintext in
                forgery == "junk"
                    ? Content.random(plaintext.count, seed: 7) : Array(plaintext.reversed()) + Array("!".utf8)
            }
            #expect(forged > 1)
            // M's bundle reaches C before A's does.
            try expectRefused(from: m, by: c, saying: "does not hold what its id names")
        }

        // A's genuine records arrive, and are the ones C keeps.
        _ = try group.exchange(a, c, "a-to-c")
        #expect(Array(try c.blobs.data("report")) == content)
        #expect(try c.blobs.verify(readingData: true).isHealthy)
    }

    /// Replaces the content chunks of every write-only client's blob in `vault` (a modified client's
    /// own files) with junk sealed under the same ids with the keys of the blob's write, which a
    /// member opens from the manifest with the group's class key.
    func forgeWriteOnlyChunks(in vault: Vault) throws -> Int {
        let schema = vault.schema
        let keys = try vault.keyRing()
        let coder = try ChunkRecord.Coder()
        return try vault.environment.write { txn in
            var targets: [(ChunkID, ChunkKeys)] = []
            try txn.forEach(in: schema.blobs) { key, value in
                let manifest = try BlobManifest.open(value, id: Array(key), keys: keys, cipher: coder.cipher)
                guard manifest.level == .completeUnlessOpen else { return true }
                let chunkKeys = try ChunkKeys(content: manifest, keys: keys)
                // Its content chunks (the chunker's cuts are keyed per vault, so the list may be
                // inline or in list chunks, which stay as they are).
                var lists: Set<ChunkID> = []
                if case .indirect(let references) = manifest.chunks { lists = Set(references.map(\.id)) }
                try BlobStore(schema: schema).forEachReference(of: manifest, keys: chunkKeys, coder: coder, in: txn) {
                    if !lists.contains($0) { targets.append(($0, chunkKeys)) }
                }
                return true
            }
            for (id, chunkKeys) in targets {
                let genuine = try #require(try schema.records.withRecord(id, in: txn) { Array($0) })
                let plaintext = try genuine.withUnsafeBytes {
                    try ChunkRecord.open($0, id: id, keys: chunkKeys, coder: coder)
                }
                let forged = try Content.random(plaintext.count, seed: 9).withUnsafeBytes {
                    try ChunkRecord.seal($0, id: id, keys: chunkKeys, coder: coder)
                }
                try schema.records.put(id, forged, in: txn)
            }
            return targets.count
        }
    }

    @Test(
        "a write-only client's chunk forged with the keys of its write is refused when its blob takes it; the genuine one is kept"
    )
    func forgedWriteOnlyChunkIsRefused() throws {
        let (owner, m, c, content) = try groupWithWriteOnlyBlob()
        defer { for vault in [owner, m, c] { vault.close() } }
        #expect(try forgeWriteOnlyChunks(in: m) > 1)

        try expectRefused(from: m, by: c, saying: "sealed with a write-only client's keys, that does not hold")

        _ = try group.exchange(owner, c, "a-to-c")
        let name = try #require(try c.blobs.list().first { $0.name.hasPrefix("nightly.dump@") }?.name)
        #expect(Array(try c.blobs.data(name)) == content)
        #expect(try c.blobs.verify(readingData: true).isHealthy)
    }

    /// A group where a write-only client's blob (W) was dropped into A's vault and reached M: A (the
    /// owner, unlocked), M and C. C has not received W.
    func groupWithWriteOnlyBlob() throws -> (owner: Vault, m: Vault, c: Vault, content: [UInt8]) {
        let a = try group.createFirst()
        try a.allowWriteOnlyClients(true)
        try a.export(to: group.bundle("founding"))
        let (m, _) = try group.join("m", from: group.bundle("founding"))
        let (c, _) = try group.join("c", from: group.bundle("founding"))
        _ = try group.exchange(m, a, "m-to-a")
        _ = try group.exchange(c, a, "c-to-a")
        a.close()
        // Small enough that its chunk list stays in its manifest (the chunker's cuts are keyed per
        // vault): the made-up records below name it, and a list in list chunks of the genuine
        // write's would not open with the made-up record's keys, so its own export would fail.
        let content = Content.mixed(60_000, seed: 44)
        try group.dropWriteOnlyBlob("nightly.dump", content)
        let owner = try group.fixture.open()
        try owner.unlock(passphrase: SyncGroupFixture.passphrase)
        _ = try group.exchange(owner, m, "a-to-m")
        return (owner, m, c, content)
    }

    /// Every blob manifest of a vault, opened, by record id.
    static func manifests(
        in txn: Transaction,
        schema: Schema,
        keys: KeyRing,
        coder: ChunkRecord.Coder
    ) throws -> [[UInt8]: BlobManifest] {
        var manifests: [[UInt8]: BlobManifest] = [:]
        try txn.forEach(in: schema.blobs) { key, value in
            manifests[Array(key)] = try BlobManifest.open(value, id: Array(key), keys: keys, cipher: coder.cipher)
            return true
        }
        return manifests
    }

    /// A modified client's made-up record in `vault`: a write-only blob of its own write, `decoy`,
    /// whose chunk list names the chunks of the write-only blob `genuine` (red team round 43); with
    /// `newerVersion`, the genuine record itself, its write's keys replaced by the decoy's, as a
    /// newer version of the modified client's (round 44, G1).
    func makeDecoy(in vault: Vault, naming genuine: String, newerVersion: Bool = false) throws {
        try vault.blobs.write(
            "decoy",
            data: Content.random(1_000, seed: 3),
            options: BlobWriteOptions(protection: .completeUnlessOpen)
        )
        let (schema, keys, coder) = (vault.schema, try vault.keyRing(), try ChunkRecord.Coder())
        try vault.environment.write { txn in
            let manifests = try Self.manifests(in: txn, schema: schema, keys: keys, coder: coder)
            let (realID, real) = try #require(manifests.first { $0.value.name == genuine })
            let (id, decoy) = try #require(manifests.first { $0.value.name == "decoy" })
            guard newerVersion else {
                var forged = decoy
                (forged.chunks, forged.chunkCount, forged.size, forged.digest) =
                    (real.chunks, real.chunkCount, real.size, real.digest)
                try txn.put(schema.blobs, key: id, value: try forged.seal(id: id, keys: keys, cipher: coder.cipher))
                return
            }
            var forged = real
            forged.write = decoy.write
            try txn.put(schema.blobs, key: realID, value: try forged.seal(id: realID, keys: keys, cipher: coder.cipher))
            try ChangeLog.record(
                .blobPut,
                recordID: realID,
                scope: .syncable,
                description: nil,
                keys: keys,
                in: txn,
                schema: schema
            )
        }
    }

    @Test(
        "a made-up record naming a write-only client's chunks the vault holds already is refused, naming its device (red team round 43, F1)"
    )
    func decoyOverChunksHereIsRefused() throws {
        let (owner, m, c, content) = try groupWithWriteOnlyBlob()
        defer { for vault in [owner, m, c] { vault.close() } }
        _ = try group.exchange(owner, c, "a-to-c")
        try makeDecoy(in: m, naming: "nightly.dump")
        try expectRefused(from: m, by: c, saying: "of a write-only client's write that its keys do not open")
        // C's own bundles stay good for a newcomer that lacks the blob.
        let (newcomer, _) = try group.join(
            "n",
            from: try { () throws -> URL in
                let url = group.bundle("c-full")
                try c.export(to: url)
                return url
            }()
        )
        defer { newcomer.close() }
        let name = try #require(try newcomer.blobs.list().first { $0.name.hasPrefix("nightly.dump@") }?.name)
        #expect(Array(try newcomer.blobs.data(name)) == content)
    }

    @Test(
        "a made-up record held back for chunks is dropped when the genuine ones arrive, which are kept (red team rounds 43, F2, and 44, G1)",
        arguments: [false, true]
    )
    func heldDecoyIsDropped(newerVersion: Bool) throws {
        let (owner, m, c, content) = try groupWithWriteOnlyBlob()
        defer { for vault in [owner, m, c] { vault.close() } }
        // M's next bundle for C leaves out what it sent C before (W and its chunks): the decoy alone.
        try m.export(to: group.bundle("m-to-c-first"), peer: "c")
        try makeDecoy(in: m, naming: "nightly.dump", newerVersion: newerVersion)
        try m.export(to: group.bundle("m-to-c"), peer: "c")
        let held = try c.import(from: group.bundle("m-to-c"))
        #expect(held.held == 1)

        let arrived = try group.exchange(owner, c, "a-to-c")
        #expect(arrived.droppedForgedRecords == 1)
        #expect(arrived.held == 0)
        let names = try c.blobs.list().map(\.name)
        // (With a newer version made up, the decoy is the modified client's own blob, and stays.)
        #expect(newerVersion || !names.contains { $0.hasPrefix("decoy") })
        let name = try #require(names.first { $0.hasPrefix("nightly.dump@") })
        #expect(Array(try c.blobs.data(name)) == content)
        #expect(try c.blobs.verify(readingData: true).isHealthy)
    }
    @Test(
        "records a member made up, naming chunks no device sends, name their sender, and stop making imports incomplete once it is revoked (red team round 44, G2)"
    )
    func madeUpRecordsOfRevokedSender() throws {
        let a = try group.createFirst()
        try a.export(to: group.bundle("founding"))
        let (m, _) = try group.join("m", from: group.bundle("founding"))
        let (c, _) = try group.join("c", from: group.bundle("founding"))
        defer { for vault in [a, m, c] { vault.close() } }
        for (vault, name) in [(m, "m"), (c, "c")] { _ = try group.exchange(vault, a, "\(name)-to-a") }
        _ = try group.exchange(a, c, "a-to-c")
        _ = try group.exchange(a, m, "a-to-m")
        // M's modified client: a synced blob whose chunk list names the chunks of its device-bound
        // blob, which no bundle carries.
        try m.blobs.write(
            "private",
            data: Content.random(50_000, seed: 5),
            options: BlobWriteOptions(scope: .deviceBound)
        )
        try m.blobs.write("decoy", data: Content.random(1_000, seed: 6))
        let (schema, keys, coder) = (m.schema, try m.keyRing(), try ChunkRecord.Coder())
        try m.environment.write { txn in
            let manifests = try Self.manifests(in: txn, schema: schema, keys: keys, coder: coder)
            let (_, hidden) = try #require(manifests.first { $0.value.name == "private" })
            let (id, decoy) = try #require(manifests.first { $0.value.name == "decoy" })
            var forged = decoy
            (forged.chunks, forged.chunkCount, forged.size, forged.digest) =
                (hidden.chunks, hidden.chunkCount, hidden.size, hidden.digest)
            try txn.put(schema.blobs, key: id, value: try forged.seal(id: id, keys: keys, cipher: coder.cipher))
        }
        let first = try group.exchange(m, c, "m-to-c")
        #expect(first.held == 1 && first.isIncomplete)
        #expect(first.heldBySender == [HeldSender(deviceID: m.deviceID, records: 1)], "the sender is named")
        // C asks; M answers without the data (it sends no device-bound chunk): still waiting.
        _ = try group.exchange(c, m, "c-to-m")
        let answered = try group.exchange(m, c, "m-to-c-again")
        #expect(
            answered.held == 1 && answered.isIncomplete
                && answered.heldBySender == [HeldSender(deviceID: m.deviceID, records: 1)]
        )
        // A revokes M; C learns of it, and M's records stop counting, though they are kept.
        try a.revoke(device: m.deviceID)
        let revoked = try group.exchange(a, c, "a-to-c-revoked")
        #expect(revoked.held == 0 && revoked.heldFromFormerMembers == 1 && revoked.heldBySender.isEmpty)
        #expect(!revoked.isIncomplete)
        let kept = try c.environment.read { txn in try HeldRecords(schema: c.schema).tally(active: nil, in: txn) }
        #expect(kept.waiting == 1 && kept.bySender == [m.deviceID: 1])
        #expect(try !c.blobs.list().contains { $0.name == "decoy" })
        #expect(try c.blobs.verify(readingData: true).isHealthy)
    }
    @Test(
        "a held record whose sender's join was voided, with no revocation, stops making imports incomplete (outside test of G2's fix)"
    )
    func heldRecordOfVoidedSender() throws {
        let a = try group.createFirst()
        try a.blobs.write("x", data: Content.random(200_000, seed: 9))
        try a.export(to: group.bundle("founding"))
        let (b, _) = try group.join("b", from: group.bundle("founding"))
        let (c, _) = try group.join("c", from: group.bundle("founding"))
        let (d, _) = try group.join("d", from: group.bundle("founding"))
        defer { for vault in [a, b, c, d] { vault.close() } }
        _ = try group.exchange(b, a, "b-to-a")
        try b.export(to: group.bundle("b-to-c"))
        _ = try c.import(from: group.bundle("b-to-c"))
        // C's and D's first bundles for A: their next ones leave out what these sent.
        for (vault, name) in [(c, "c"), (d, "d")] {
            try vault.export(to: group.bundle("\(name)-to-a"), peer: "a")
            _ = try a.import(from: group.bundle("\(name)-to-a"))
        }
        // B renames the blob while A deletes it; D relays B's rename to A, which lacks the data.
        try b.blobs.rename("x", to: "y")
        try a.blobs.delete("x")
        try b.export(to: group.bundle("b-to-d"), peer: "d")
        _ = try d.import(from: group.bundle("b-to-d"))
        try d.export(to: group.bundle("d-to-a-relay"), peer: "a")
        let held = try a.import(from: group.bundle("d-to-a-relay"))
        #expect(held.isIncomplete && held.heldBySender == [HeldSender(deviceID: d.deviceID, records: 1)])
        // C, which never heard of D's join, closes passphrase joins: at A, D's join no longer counts,
        // and D cannot be revoked (it is no device of the group), yet what it sent stops counting.
        try c.setJoinPolicy(.approval)
        try c.export(to: group.bundle("c-to-a-closed"), peer: "a")
        let closed = try a.import(from: group.bundle("c-to-a-closed"))
        #expect(try !a.members().contains { $0.deviceID == d.deviceID && $0.isActive })
        #expect(closed.held == 0 && closed.heldFromFormerMembers == 1, "\(closed)")
        #expect(!closed.isIncomplete)
        // B, the author, still holds the data: asked, it sends it, and the record applies.
        _ = try group.exchange(a, b, "a-to-b")
        let answered = try group.exchange(b, a, "b-to-a-answer")
        #expect(answered.held == 0 && answered.heldFromFormerMembers == 0 && !answered.isIncomplete)
        #expect(try a.blobs.list().map(\.name) == ["y"])
        #expect(try a.environment.read { txn in try HeldRecords(schema: a.schema).any(in: txn) } == false)
        #expect(try a.blobs.verify(readingData: true).isHealthy)
    }
}
