import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Chunk lists and snapshot trees stay in the vault when content is offloaded (releasing a record
/// reads them), and those an earlier Coffer offloaded come back.
@Suite("Offloading keeps records' structure here", .serialized)
struct OffloadStructureTests {
    /// A vault with a snapshot of a small tree and a blob, pushed and offloaded with no cache.
    func offloadedVault(_ fixture: RemoteFixture, _ group: SyncGroupFixture) throws -> (Vault, S3Remote) {
        let remote = try fixture.remote()
        let vault = try group.createFirst()
        let tree = group.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        for index in 0..<3 {
            try Data(SplitMix64.bytes(150_000, seed: UInt64(index))).write(to: tree.appendingPathComponent("f\(index)"))
        }
        _ = try vault.snapshots.backup(directory: tree, options: BackupOptions(name: "tree"))
        try vault.blobs.write("blob", data: Data(SplitMix64.bytes(300_000, seed: 9)))
        _ = try vault.offloadContent(to: remote, keep: 0)
        return (vault, remote)
    }

    func structure(of vault: Vault) throws -> Set<ChunkID> {
        try RecordStructure(environment: vault.environment, schema: vault.schema, keys: try vault.keyRing()).chunks()
    }

    func localRecords(_ ids: Set<ChunkID>, in vault: Vault) throws -> Int {
        try vault.environment.read { txn in
            ids.filter { (try? vault.schema.records.contains($0, in: txn)) == true }.count
        }
    }

    @Test("an offload keeps every tree and list chunk, and drops the content")
    func structureStays() throws {
        let (fixture, group) = (try RemoteFixture(), try SyncGroupFixture())
        let (vault, remote) = try offloadedVault(fixture, group)
        defer { vault.close() }
        let structure = try structure(of: vault)
        #expect(!structure.isEmpty)
        #expect(try localRecords(structure, in: vault) == structure.count)
        let summary = try vault.offloadContent(to: remote, keep: 0)
        #expect(summary.structureChunks == structure.count && summary.offloadedChunks == 0)
        // Content chunks are gone from here, yet the snapshot is forgotten with no store attached.
        vault.schema.offloadedChunks = nil
        #expect(try vault.environment.read { txn in try vault.schema.records.count(in: txn) } == structure.count)
        try vault.snapshots.forget(try #require(vault.snapshots.list().first).id)
    }

    @Test("tree chunks an earlier Coffer offloaded are fetched back and kept for good")
    func offloadedStructureComesBack() throws {
        let (fixture, group) = (try RemoteFixture(), try SyncGroupFixture())
        let (vault, remote) = try offloadedVault(fixture, group)
        defer { vault.close() }
        let structure = try structure(of: vault)
        // As an earlier Coffer left it: the structure's records dropped too.
        try vault.environment.write { txn in
            for id in structure { try vault.schema.records.delete(id, in: txn) }
        }
        #expect(try localRecords(structure, in: vault) == 0)
        _ = try vault.offloadContent(to: remote, keep: 0)
        #expect(try localRecords(structure, in: vault) == structure.count)
        let cached = try vault.environment.read { txn in
            try structure.filter { try StoreContent(schema: vault.schema)?.isCached($0, in: txn) == true }.count
        }
        #expect(cached == 0, "tree chunks brought back are in the cache, which may drop them again")
    }
}
