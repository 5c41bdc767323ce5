import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Every object a chunk was noted in is kept (docs/FORMAT.md, "Chunks in the object store"): a read
/// falls back to another copy when one object is gone, and forgetting an object or a chunk leaves
/// nothing of it behind.
@Suite("Where chunks lie: every object a chunk was noted in")
struct StoreContentSitesTests {
    static let remote = "http://127.0.0.1:1 s3://bucket/group"

    func object(_ key: String, remote: String = Self.remote) -> StoreObject {
        StoreObject(remote: remote, key: key, size: 1000, headerLength: 100, segmentSize: 65_536)
    }

    /// The keys of the store-content table of each kind (its first byte).
    func kinds(in vault: Vault, _ txn: Transaction) throws -> [UInt8: Int] {
        var kinds: [UInt8: Int] = [:]
        try txn.forEach(in: try #require(vault.schema.storeContent)) { key, _ in
            kinds[key.first ?? 0, default: 0] += 1
            return true
        }
        return kinds
    }

    @Test(
        "the first site first, then the others; forgetting an object falls back; forgetting the chunk leaves nothing"
    )
    func sitesFallBackAndGo() throws {
        let vault = try VaultFixture().create()
        defer { vault.close() }
        try vault.schema.ensureStoreContent(in: vault.environment)
        let content = try #require(StoreContent(schema: vault.schema))
        let id = try ChunkID(stored: SplitMix64.bytes(32, seed: 1))
        let other = try ChunkID(stored: SplitMix64.bytes(32, seed: 2))
        try vault.environment.write { txn in
            let own = try content.number(of: object("a/1-1.bundle"), in: txn)
            let theirs = try content.number(of: object("b/1-1.bundle"), in: txn)
            try content.note(id, at: ChunkSite(object: own, offset: 40, length: 10), offloadedTo: nil, in: txn)
            try content.note(other, at: ChunkSite(object: own, offset: 90, length: 10), offloadedTo: nil, in: txn)
            try content.note(id, at: ChunkSite(object: theirs, offset: 70, length: 10), offloadedTo: nil, in: txn)
            // Noted again in the same object: still two sites, not three.
            try content.note(id, at: ChunkSite(object: theirs, offset: 70, length: 10), offloadedTo: nil, in: txn)
            // The first noted stays first: a later object may carry a record that is not the chunk's.
            #expect(try content.sites(of: id, in: txn).map(\.object.key) == ["a/1-1.bundle", "b/1-1.bundle"])
            #expect(try content.sites(of: id, in: txn).map(\.site.offset) == [40, 70])

            try content.forget(theirs, in: txn)
            #expect(try content.site(of: id, in: txn)?.object.key == "a/1-1.bundle")
            #expect(try content.hasSite(id, in: txn))
            // Nothing of the forgotten object is left.
            #expect(try kinds(in: vault, txn)[7] == nil && kinds(in: vault, txn)[8] == nil)

            let third = try content.number(of: object("c/1-1.bundle"), in: txn)
            try content.note(id, at: ChunkSite(object: third, offset: 5, length: 10), offloadedTo: nil, in: txn)
            #expect(try content.sites(of: id, in: txn).count == 2)
            try content.forgetSite(of: id, in: txn)
            #expect(try content.sites(of: id, in: txn).isEmpty && !content.hasSite(id, in: txn))
            #expect(try kinds(in: vault, txn)[7] == nil && kinds(in: vault, txn)[8] == nil)
            // The other chunk keeps its site.
            #expect(try content.site(of: other, in: txn)?.site.offset == 90)
        }
    }

    @Test("a site in the store the chunk was offloaded to stays the first; one in another store is kept beside it")
    func offloadedStoreFirst() throws {
        let vault = try VaultFixture().create()
        defer { vault.close() }
        try vault.schema.ensureStoreContent(in: vault.environment)
        let content = try #require(StoreContent(schema: vault.schema))
        let id = try ChunkID(stored: SplitMix64.bytes(32, seed: 3))
        try vault.environment.write { txn in
            let home = try content.number(of: object("a/1-1.bundle"), in: txn)
            let elsewhere = try content.number(of: object("a/1-1.bundle", remote: "http://other s3://x/y"), in: txn)
            try content.note(id, at: ChunkSite(object: home, offset: 40, length: 10), offloadedTo: Self.remote, in: txn)
            try content.note(
                id,
                at: ChunkSite(object: elsewhere, offset: 50, length: 10),
                offloadedTo: Self.remote,
                in: txn
            )
            #expect(try content.sites(of: id, in: txn).map(\.object.remote) == [Self.remote, "http://other s3://x/y"])
            // Noted first in another store, then in the one it is offloaded to: that one comes first.
            let second = try ChunkID(stored: SplitMix64.bytes(32, seed: 4))
            try content.note(
                second,
                at: ChunkSite(object: elsewhere, offset: 60, length: 10),
                offloadedTo: nil,
                in: txn
            )
            try content.note(
                second,
                at: ChunkSite(object: home, offset: 80, length: 10),
                offloadedTo: Self.remote,
                in: txn
            )
            #expect(
                try content.sites(of: second, in: txn).map(\.object.remote) == [Self.remote, "http://other s3://x/y"]
            )
            #expect(try content.isWhole(home, in: txn) == false)
            try content.noteWhole(home, in: txn)
            #expect(try content.isWhole(home, in: txn))
            try content.forget(home, in: txn)
            #expect(try content.isWhole(home, in: txn) == false)
            #expect(try content.site(of: id, in: txn)?.object.remote == "http://other s3://x/y")
        }
    }

    @Test("a thin import notes where its chunks lie only once its stream verifies: a refused bundle moves no site")
    func refusedBundleMovesNoSite() throws {
        let (fixture, group) = (try RemoteFixture(), try SyncGroupFixture())
        let remote = try fixture.remote()
        let a = try group.createFirst()
        defer { a.close() }
        try a.blobs.write("f", data: Data(SplitMix64.bytes(300_000, seed: 41)))
        // More chunks than an import stages in one batch (1,024), so that some are staged before
        // the stream fails.
        for index in 0..<1_100 {
            try a.blobs.write("small-\(index)", data: Data(SplitMix64.bytes(64, seed: 1_000 + UInt64(index))))
        }
        try a.push(to: remote)
        // B gets A's content from a bundle file and pushes it again: its object holds the same chunks.
        let bundle = group.bundle("a")
        try a.export(to: bundle)
        let (b, _) = try group.join("b", from: bundle)
        defer { b.close() }
        let (thin, _) = try fixture.join(group, name: "thin", content: .thin(keep: 0))
        defer { thin.close() }
        try b.push(to: remote)
        let client = try fixture.client()
        let layout = RemoteLayout(location: remote.location)
        let prefix = layout.listingPrefix + b.deviceID.uuidString.lowercased()
        let key = try #require(
            try client.list(prefix: layout.listingPrefix).map(\.key).first {
                $0.hasPrefix(prefix) && $0.hasSuffix(".bundle")
            }
        )
        // Cut short: every chunk frame is still there, the signature is not.
        let bytes = try #require(try client.get(key))
        try client.put(key, body: Array(bytes.dropLast(40)))
        _ = try? thin.pull(from: remote)

        let aDevice = a.deviceID.uuidString.lowercased()
        try thin.environment.read { txn in
            let content = try #require(StoreContent(schema: thin.schema))
            var offloaded = 0
            try content.forEachSite(in: txn) { id, _ in
                guard try content.isOffloaded(id, in: txn) else { return true }
                offloaded += 1
                let first = try content.site(of: id, in: txn)
                #expect(first?.object.key.contains(aDevice) == true, "\(first?.object.key ?? "no site")")
                return true
            }
            #expect(offloaded > 0)
        }
        #expect(try thin.blobs.data("f") == Data(SplitMix64.bytes(300_000, seed: 41)))
    }

    /// A chunk record with a write-only client's header (level completeUnlessOpen) and `body`.
    static func perWriteRecord(_ body: [UInt8]) -> [UInt8] { [1, 2, 3, 0, 0, 0, 0, UInt8(body.count)] + body }

    @Test(
        "a write-only client's chunk gets a site only for a copy of the record the vault holds or dropped (red team round 42, F2)"
    )
    func perWriteSitesOnlyForCopies() throws {
        let vault = try VaultFixture().create()
        defer { vault.close() }
        try vault.schema.ensureStoreContent(in: vault.environment)
        let content = try #require(StoreContent(schema: vault.schema))
        let id = try ChunkID(stored: SplitMix64.bytes(32, seed: 5))
        let other = try ChunkID(stored: SplitMix64.bytes(32, seed: 6))
        let genuine = Self.perWriteRecord(SplitMix64.bytes(40, seed: 7))
        let junk = Self.perWriteRecord(SplitMix64.bytes(40, seed: 8))
        func site(_ chunk: ChunkID, _ record: [UInt8], offset: UInt64) throws -> BundleChunkSite {
            try BundleChunkSite(id: chunk, offset: offset, record: record)
        }
        try vault.environment.write { txn in
            let store = ChunkStore(schema: vault.schema)
            try store.retain(id, sealed: genuine, in: txn)
            // Another chunk, not sealed per write, held only in the store: no copy to compare with.
            _ = try store.retainOffloaded(other, in: txn)
            try content.note(
                other,
                at: ChunkSite(object: content.number(of: object("a"), in: txn), offset: 1, length: 48),
                offloadedTo: nil,
                in: txn
            )

            try BundleChunkSite.note(
                [site(id, junk, offset: 10)],
                in: object("forged-1"),
                schema: vault.schema,
                txn: txn
            )
            #expect(try content.sites(of: id, in: txn).isEmpty)
            try BundleChunkSite.note([site(id, genuine, offset: 20)], in: object("b"), schema: vault.schema, txn: txn)
            #expect(try content.sites(of: id, in: txn).map(\.object.key) == ["b"])

            // Dropped locally: its digest tells copies still.
            try content.dropLocalRecord(id, in: txn)
            #expect(try content.isOffloaded(id, in: txn))
            try BundleChunkSite.note(
                [site(id, junk, offset: 30)],
                in: object("forged-2"),
                schema: vault.schema,
                txn: txn
            )
            try BundleChunkSite.note([site(id, genuine, offset: 40)], in: object("c"), schema: vault.schema, txn: txn)
            #expect(try content.sites(of: id, in: txn).map(\.object.key) == ["b", "c"])

            try BundleChunkSite.note(
                [site(other, junk, offset: 50)],
                in: object("forged-3"),
                schema: vault.schema,
                txn: txn
            )
            #expect(try content.sites(of: other, in: txn).map(\.object.key) == ["a"])

            // Freed: nothing of it is left, its digest included.
            try store.release(id, in: txn)
            #expect(try kinds(in: vault, txn)[10] == nil)
        }
    }

    /// Records by object key, as a store would give them.
    final class FakeStore: OffloadedChunkSource, @unchecked Sendable {
        let remote = StoreContentSitesTests.remote
        let records: [String: [UInt8]]
        var cached: [[UInt8]] = []
        init(_ records: [String: [UInt8]]) { self.records = records }
        func record(of id: ChunkID, at site: ChunkSite, in object: StoreObject) throws(CofferError) -> [UInt8] {
            guard let record = records[object.key] else { throw CofferError(.itemNotFound, "gone") }
            return record
        }
        func offerToCache(_ id: ChunkID, record: [UInt8]) { cached.append(record) }
        func noteUse(of id: ChunkID) {}
        func noteDamaged(_ object: StoreObject) {}
        func finish() {}
    }

    @Test("a record a reader refuses as damaged is passed over for the chunk's next site, and not cached")
    func refusedRecordFallsBack() throws {
        let vault = try VaultFixture().create()
        defer { vault.close() }
        try vault.schema.ensureStoreContent(in: vault.environment)
        let content = try #require(StoreContent(schema: vault.schema))
        let id = try ChunkID(stored: SplitMix64.bytes(32, seed: 9))
        let (junk, genuine) = (SplitMix64.bytes(48, seed: 10), SplitMix64.bytes(48, seed: 11))
        let store = FakeStore(["junk": junk, "genuine": genuine])
        vault.schema.offloadedChunks = store
        defer { vault.schema.offloadedChunks = nil }
        try vault.environment.write { txn in
            _ = try ChunkStore(schema: vault.schema).retainOffloaded(id, in: txn)
            for (key, offset) in [("junk", UInt64(1)), ("genuine", 2)] {
                let number = try content.number(of: object(key), in: txn)
                try content.note(
                    id,
                    at: ChunkSite(object: number, offset: offset, length: 48),
                    offloadedTo: Self.remote,
                    in: txn
                )
            }
        }
        let read = try vault.environment.read { txn in
            try ChunkStore(schema: vault.schema).withRecord(id, in: txn) { record in
                guard Array(record) == genuine else {
                    throw CofferError(.decode, "a chunk's content does not match its id")
                }
                return Array(record)
            }
        }
        #expect(read == genuine)
        #expect(store.cached == [genuine])
        // Refused everywhere: the first refusal.
        let refused = try vault.environment.read { txn in
            Result {
                try ChunkStore(schema: vault.schema).withRecord(id, in: txn) { _ -> Int in
                    throw CofferError(.decode, "refused")
                }
            }
        }
        #expect((try? refused.get()) == nil)
    }
}
