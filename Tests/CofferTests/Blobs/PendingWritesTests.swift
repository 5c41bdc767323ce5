import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Pending writes")
struct PendingWritesTests {
    let fixture: StorageFixture
    var environment: Environment { fixture.environment }
    var schema: Schema { fixture.schema }
    let store: ChunkStore
    let pending: PendingWrites

    init() throws {
        fixture = try StorageFixture()
        store = ChunkStore(schema: fixture.schema)
        pending = PendingWrites(schema: fixture.schema)
    }

    /// Takes references to `count` new chunks for `write`, in two batches, as a writer would.
    func stage(_ write: PendingWrites.WriteID, owner: ProcessIdentity = .current, count: Int) throws -> [ChunkID] {
        let ids = (0..<count).map { _ in ChunkID(SecureRandom.bytes(count: 32)) }
        try environment.write { (txn) throws in
            try pending.begin(write, owner: owner, in: txn)
            for id in ids { try store.retain(id, sealed: [1, 2, 3], in: txn) }
            try pending.note(Array(ids.prefix(count / 2)), batch: 0, of: write, in: txn)
            try pending.note(Array(ids.dropFirst(count / 2)), batch: 1, of: write, in: txn)
        }
        return ids
    }

    func chunkCount() throws -> Int { try environment.read { (txn) throws in try schema.records.count(in: txn) } }
    func pendingCount() throws -> Int { try environment.read { (txn) throws in try txn.count(schema.pending) } }

    @Test("finishing a write hands its references to the manifest: chunks stay, the entry goes")
    func finish() throws {
        let write = PendingWrites.WriteID.random()
        _ = try stage(write, count: 10)
        try environment.write { (txn) throws in try pending.finish(write, in: txn) }
        #expect(try chunkCount() == 10)
        #expect(try pendingCount() == 0)
    }

    @Test("abandoning a write releases every chunk it noted")
    func abandon() throws {
        let write = PendingWrites.WriteID.random()
        let ids = try stage(write, count: 10)
        // Another write shares one chunk: it must survive.
        try environment.write { (txn) throws in try store.retain(ids[3], sealed: nil, in: txn) }
        let released = try environment.write { (txn) throws in try pending.abandon(write, store: store, in: txn) }
        #expect(released.released == 10)
        #expect(released.freed == 9)
        #expect(try chunkCount() == 1)
        #expect(try pendingCount() == 0)
    }

    @Test("releasing in steps frees what abandoning at once frees; a second release finds nothing to free")
    func releaseInSteps() throws {
        let write = PendingWrites.WriteID.random()
        // 150 chunks per batch: several steps each.
        let ids = try stage(write, count: 300)
        try environment.write { (txn) throws in try store.retain(ids[7], sealed: nil, in: txn) }
        let released = try pending.release(write, store: store, environment: environment)
        #expect(released.writes == 1 && released.references == 300)
        #expect(released.freedChunks == 299 && released.freedBytes == 299 * 3)
        #expect(try chunkCount() == 1)
        #expect(try pendingCount() == 0)
        // A second process reclaiming the same write meanwhile releases nothing twice.
        let again = try pending.release(write, store: store, environment: environment)
        #expect(again.references == 0 && again.freedChunks == 0)
        #expect(try chunkCount() == 1)
    }

    @Test("reclaimDead releases writes whose owner exited or whose pid was reused, never a live one")
    func reclaimDead() throws {
        let exited = Process()
        exited.executableURL = URL(fileURLWithPath: "/bin/true")
        try exited.run()
        exited.waitUntilExit()
        let deadOwner = ProcessIdentity(pid: UInt32(exited.processIdentifier), startTime: 1)
        let reusedPid = ProcessIdentity(
            pid: ProcessIdentity.current.pid,
            startTime: ProcessIdentity.current.startTime + 1
        )
        #expect(ProcessIdentity.current.isAlive)
        #expect(!deadOwner.isAlive && !reusedPid.isAlive)

        _ = try stage(.random(), owner: deadOwner, count: 4)
        _ = try stage(.random(), owner: reusedPid, count: 6)
        _ = try stage(.random(), count: 8)
        let result = try pending.reclaimDead(store: store, environment: environment)
        #expect(result.writes == 2)
        #expect(result.references == 10)
        #expect(try chunkCount() == 8)
        let again = try pending.reclaimDead(store: store, environment: environment)
        #expect(again.writes == 0)
    }
}
