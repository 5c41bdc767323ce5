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
            try txn.forEach(in: schema.chunks) { key, value in
                if BundleExporter<DataSink>.scope(ofChunk: value) == .syncable {
                    genuine.append((Array(key), Array(value)))
                }
                return true
            }
            for (id, record) in genuine { try txn.put(schema.chunks, key: id, value: forge(record)) }
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
        #expect(try receiver.dumpTables() == before)
    }

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
                saying: "sealed with a write-only client's keys from a record of another write"
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
                let genuine = try #require(try txn.withValue(schema.chunks, key: id.bytes) { Array($0) })
                let plaintext = try genuine.withUnsafeBytes {
                    try ChunkRecord.open($0, id: id, keys: chunkKeys, coder: coder)
                }
                let forged = try Content.random(plaintext.count, seed: 9).withUnsafeBytes {
                    try ChunkRecord.seal($0, id: id, keys: chunkKeys, coder: coder)
                }
                try txn.put(schema.chunks, key: id.bytes, value: forged)
            }
            return targets.count
        }
    }

    @Test(
        "a write-only client's chunk forged with the keys of its write is refused when its blob takes it; the genuine one is kept"
    )
    func forgedWriteOnlyChunkIsRefused() throws {
        let a = try group.createFirst()
        try a.allowWriteOnlyClients(true)
        try a.export(to: group.bundle("founding"))
        let (m, _) = try group.join("m", from: group.bundle("founding"))
        let (c, _) = try group.join("c", from: group.bundle("founding"))
        _ = try group.exchange(m, a, "m-to-a")
        _ = try group.exchange(c, a, "c-to-a")
        a.close()
        // A write-only client drops a blob into A's vault; A, unlocked again, sends it to M.
        let content = Content.mixed(300_000, seed: 43)
        try group.dropWriteOnlyBlob("nightly.dump", content)
        let owner = try group.fixture.open()
        try owner.unlock(passphrase: SyncGroupFixture.passphrase)
        defer { for vault in [owner, m, c] { vault.close() } }
        _ = try group.exchange(owner, m, "a-to-m")
        #expect(try forgeWriteOnlyChunks(in: m) > 1)

        try expectRefused(from: m, by: c, saying: "sealed with a write-only client's keys, that does not hold")

        _ = try group.exchange(owner, c, "a-to-c")
        let name = try #require(try c.blobs.list().first { $0.name.hasPrefix("nightly.dump@") }?.name)
        #expect(Array(try c.blobs.data(name)) == content)
        #expect(try c.blobs.verify(readingData: true).isHealthy)
    }
}
