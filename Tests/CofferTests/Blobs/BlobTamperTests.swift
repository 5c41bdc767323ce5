import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Blob tampering is detected by reads and by verify --read-data")
struct BlobTamperTests {
    let fixture: VaultFixture
    let vault: Vault
    let victim = Content.mixed(2 << 20, seed: 21)
    let bystander = Content.random(500_000, seed: 22)

    init() throws {
        fixture = try VaultFixture()
        vault = try fixture.create()
        try vault.blobs.write("victim", data: victim)
        try vault.blobs.write("bystander", data: bystander)
    }

    var schema: Schema { vault.schema }

    /// The chunk ids of a blob, in order.
    func chunkIDs(_ name: String) throws -> [ChunkID] {
        let keys = try vault.keyRing()
        return try vault.environment.read { txn in
            let found = try BlobStore(schema: schema).require(name, keys: keys, cipher: try AESGCM(), in: txn)
            guard case .inline(let entries) = found.manifest.chunks else { return [] }
            return entries.map(\.id)
        }
    }

    func blobID(_ name: String) throws -> [UInt8] {
        try BlobManifest.id(of: name, scope: .syncable, keys: try vault.keyRing())
    }

    /// Expects reading `victim` to fail with `.decode` naming it, verify to report it by name, and the
    /// bystander to stay readable.
    func expectDetected(_ what: Comment) throws {
        let error = #expect(throws: CofferError.self, what) { _ = try vault.blobs.data("victim") }
        #expect(error?.code == .decode, what)
        #expect(error?.message.contains("victim") == true, what)
        let report = try vault.blobs.verify(readingData: true)
        #expect(report.problems.contains { $0.blob == "victim" }, "\(what): \(report.problems)")
        #expect(!report.problems.contains { $0.blob == "bystander" }, what)
        #expect(try [UInt8](vault.blobs.data("bystander")) == bystander, what)
    }

    @Test("a flipped byte in a chunk record")
    func flippedChunkByte() throws {
        let id = try chunkIDs("victim")[3]
        try vault.environment.write { (txn) throws in
            var record = try #require(try schema.records.record(id, in: txn))
            record[record.count / 2] ^= 0x20
            try schema.records.put(id, record, in: txn)
        }
        try expectDetected("flipped chunk byte")
    }

    @Test("two chunk records swapped")
    func swappedChunks() throws {
        let ids = try chunkIDs("victim")
        try vault.environment.write { (txn) throws in
            let first = try #require(try schema.records.record(ids[1], in: txn))
            let second = try #require(try schema.records.record(ids[2], in: txn))
            try schema.records.put(ids[1], second, in: txn)
            try schema.records.put(ids[2], first, in: txn)
        }
        try expectDetected("swapped chunks")
    }

    @Test("a chunk record missing")
    func missingChunk() throws {
        let id = try chunkIDs("victim")[0]
        try vault.environment.write { (txn) throws in try schema.records.delete(id, in: txn) }
        try expectDetected("missing chunk")
    }

    @Test("manifest entries reordered (resealed with the vault's own key): the content digest catches it")
    func reorderedEntries() throws {
        let keys = try vault.keyRing()
        let id = try blobID("victim")
        try vault.environment.write { (txn) throws in
            let cipher = try AESGCM()
            var found = try BlobStore(schema: schema).require("victim", keys: keys, cipher: cipher, in: txn)
            guard case .inline(var entries) = found.manifest.chunks else {
                Issue.record("expected an inline list")
                return
            }
            entries.swapAt(0, 1)
            found.manifest.chunks = .inline(entries)
            try txn.put(schema.blobs, key: id, value: try found.manifest.seal(id: id, keys: keys, cipher: cipher))
        }
        try expectDetected("reordered entries")
    }

    @Test("a flipped byte or truncation in the manifest; a manifest moved to another blob's id")
    func damagedManifest() throws {
        let id = try blobID("victim")
        let original = try #require(try vault.environment.read { txn in try txn.get(schema.blobs, key: id) })
        var flipped = original
        flipped[flipped.count - 20] ^= 1
        let otherID = try blobID("bystander")
        let otherRecord = try #require(try vault.environment.read { txn in try txn.get(schema.blobs, key: otherID) })
        for (label, key, value) in [
            ("flipped", id, flipped), ("truncated", id, Array(original.prefix(original.count - 40))),
            ("scope flag", id, [original[0], 1] + original.dropFirst(2)), ("moved", id, otherRecord),
        ] {
            try vault.environment.write { (txn) throws in try txn.put(schema.blobs, key: key, value: value) }
            let error = #expect(throws: CofferError.self, "\(label)") { _ = try vault.blobs.data("victim") }
            #expect(error?.code == .decode, "\(label)")
            let report = try vault.blobs.verify()
            #expect(!report.isHealthy, "\(label)")
            try vault.environment.write { (txn) throws in try txn.put(schema.blobs, key: id, value: original) }
        }
        #expect(try vault.blobs.verify(readingData: true).isHealthy)
    }

    @Test("reference counts that disagree with the manifests are reported")
    func wrongCounts() throws {
        let id = try chunkIDs("victim")[0]
        try vault.environment.write { (txn) throws in
            try ChunkStore(schema: schema).retain(id, sealed: nil, in: txn)
        }
        let report = try vault.blobs.verify()
        #expect(report.problems.contains { $0.message.contains("reference count") })
    }
}
