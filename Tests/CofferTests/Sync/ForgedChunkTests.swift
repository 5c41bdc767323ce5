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

    /// Replaces every syncable chunk record in `vault` (a modified client's own files) with one it
    /// seals, with the group's keys it holds, under the same id and level: `forge` gives the
    /// plaintext from the genuine one.
    func forgeChunks(in vault: Vault, _ forge: ([UInt8]) -> [UInt8]) throws -> Int {
        let schema = vault.schema
        let keys = try vault.keyRing()
        let coder = try ChunkRecord.Coder()
        var namespaces: [UInt8: ChunkKeys] = [:]
        return try vault.environment.write { txn in
            var genuine: [(ChunkID, [UInt8])] = []
            try txn.forEach(in: schema.chunks) { key, value in
                if BundleExporter<DataSink>.scope(ofChunk: value) == .syncable {
                    genuine.append((try ChunkID(stored: Array(key)), Array(value)))
                }
                return true
            }
            for (id, record) in genuine {
                let level = try #require(ProtectionLevel(code: record[2]))
                let chunkKeys =
                    try namespaces[record[2]] ?? ChunkKeys(scope: .syncable, level: level, write: nil, keys: keys)
                namespaces[record[2]] = chunkKeys
                let plaintext = try record.withUnsafeBytes {
                    try ChunkRecord.open($0, id: id, keys: chunkKeys, coder: coder)
                }
                let forged = try forge(plaintext).withUnsafeBytes {
                    try ChunkRecord.seal($0, id: id, keys: chunkKeys, coder: coder)
                }
                try txn.put(schema.chunks, key: id.bytes, value: forged)
            }
            return genuine.count
        }
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
        arguments: ["junk", "other content"]
    )
    func forgedRecordIsRefused(forgery: String) throws {
        let (a, m, c, content) = try groupWithBlob()
        defer { for vault in [a, m, c] { vault.close() } }
        let forged = try forgeChunks(in: m) { plaintext in
            forgery == "junk"
                ? Content.random(plaintext.count, seed: 7) : Array(plaintext.reversed()) + Array("!".utf8)
        }
        #expect(forged > 1)

        // M's bundle reaches C before A's does.
        let bundle = group.bundle("m-to-c")
        try m.export(to: bundle)
        let before = try c.dumpTables()
        let error = try #require(throws: CofferError.self) { try c.import(from: bundle) }
        #expect(error.code == .decode)
        #expect(error.message.contains("device \(m.deviceID.uuidString.lowercased())"))
        #expect(error.message.contains("does not hold what its id names"))
        #expect(error.message.contains("revoke it"))
        #expect(try c.dumpTables() == before)

        // A's genuine records arrive, and are the ones C keeps.
        _ = try group.exchange(a, c, "a-to-c")
        #expect(Array(try c.blobs.data("report")) == content)
        #expect(try c.blobs.verify(readingData: true).isHealthy)
    }
}
