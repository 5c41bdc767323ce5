import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Content in the object store and a bounded cache here (`coffer offload`), through the built
/// `coffer` against SeaweedFS and moto: what was offloaded reads back whole by every reader, a
/// compaction elsewhere moves it and the next pull finds it again, and a store out of reach fails
/// reads of offloaded content clearly while everything local stays readable.
@Suite("Offloading content to the object store, end to end")
struct OffloadEndToEndTests: StoreEndToEndSuite {
    let cli: CLIHarness
    let remote = "s3://coffer-cli-tests/" + UUID().uuidString.lowercased()

    var directory: TemporaryDirectory { cli.directory }

    init() throws { cli = try CLIHarness() }

    @discardableResult
    func run(
        _ arguments: [String],
        _ server: SeaweedFS,
        vault: String? = nil,
        extra: [String: String] = [:]
    ) throws
        -> Products.Result
    {
        var environment = server.environment.merging(extra) { _, new in new }
        if let vault { environment["COFFER_VAULT"] = directory.path(vault).path }
        return try cli.run(arguments, extra: environment)
    }

    /// The blob `name` as `coffer get` writes it to a file, or `nil` with the error when it fails.
    func get(
        _ name: String,
        _ server: SeaweedFS,
        vault: String? = nil,
        extra: [String: String] = [:]
    ) throws -> (bytes: [UInt8]?, error: String) {
        let file = directory.path("got-\(UUID().uuidString)")
        let got = try run(["get", name, file.path], server, vault: vault, extra: extra)
        guard got.status == 0 else { return (nil, got.error) }
        return (Array(try Data(contentsOf: file)), got.error)
    }

    func server(_ name: String) throws -> SeaweedFS {
        name == "moto" ? try SeaweedFS.moto() : try SeaweedFS.shared()
    }

    /// A tree of files of several sizes (some crossing chunk and bundle-segment boundaries) and a
    /// large blob, backed up and stored in the harness's vault, then pushed.
    func fillAndPush(_ server: SeaweedFS) throws -> (blob: [UInt8], tree: URL) {
        var seed: UInt64 = 42
        let tree = directory.path("tree")
        try FileManager.default.createDirectory(
            at: tree.appendingPathComponent("sub"),
            withIntermediateDirectories: true
        )
        for index in 0..<12 {
            seed += 1
            let bytes = SplitMix64.bytes(3_000 + index * 41_000, seed: seed)
            try Data(bytes).write(to: tree.appendingPathComponent(index % 2 == 0 ? "f\(index)" : "sub/f\(index)"))
        }
        try Data(repeating: 0x61, count: 700_000).write(to: tree.appendingPathComponent("text"))
        let blob = SplitMix64.bytes(2_500_000, seed: 7)
        let blobFile = directory.path("blob.bin")
        try Data(blob).write(to: blobFile)
        #expect(try run(["put", "big", blobFile.path], server).status == 0)
        #expect(try run(["put", "--device-only", "local", blobFile.path], server).status == 0)
        #expect(try run(["backup", tree.path, "--name", "docs"], server).status == 0)
        let pushed = try run(["push", remote, "--create-bucket"], server)
        #expect(pushed.status == 0, "\(pushed.error)")
        return (blob, tree)
    }

    /// How many chunk records the vault `name` holds locally, and how many it offloaded.
    func chunkCounts(_ name: String = "vault") throws -> (local: Int, offloaded: Int) {
        let vault = try Vault.open(at: directory.path(name))
        defer { vault.close() }
        let schema = vault.schema
        return try vault.environment.read { txn in
            var offloaded = 0
            if let content = StoreContent(schema: schema) {
                try content.forEachSite(in: txn) { id, _ in
                    if try content.isOffloaded(id, in: txn) { offloaded += 1 }
                    return true
                }
            }
            return (try schema.records.count(in: txn), offloaded)
        }
    }

    /// The bytes of chunk records vault `name` keeps in its cache (each checked to be here).
    func cachedBytes(_ name: String = "vault") throws -> Int {
        let vault = try Vault.open(at: directory.path(name))
        defer { vault.close() }
        return try vault.environment.read { txn -> Int in
            var bytes = 0
            try StoreContent(schema: vault.schema)?.forEachCached(in: txn) { id, _, length in
                let here = try vault.schema.records.contains(id, in: txn)
                #expect(here)
                bytes += length
                return true
            }
            return bytes
        }
    }

    /// Restores `docs` into `target` and compares every file with the tree.
    func expectRestored(_ tree: URL, into target: String, _ server: SeaweedFS, vault: String? = nil) throws {
        let restored = try run(["restore", "docs", "--target", directory.path(target).path], server, vault: vault)
        #expect(restored.status == 0, "\(restored.error)")
        let compared = try Products.run(
            URL(fileURLWithPath: "/usr/bin/diff"),
            ["-r", tree.path, directory.path(target).path]
        )
        #expect(compared.status == 0, "\(compared.output)")
    }

    @Test("offloaded content reads back whole through get, restore, dump and verify", arguments: ["seaweedfs", "moto"])
    func offloadAndReadBack(server name: String) throws {
        let server = try server(name)
        let (blob, tree) = try fillAndPush(server)
        let before = try chunkCounts()

        let offloaded = try run(["offload", remote, "--json"], server)
        #expect(offloaded.status == 0, "\(offloaded.error)")
        let summary = try JSONDecoder().decode(OffloadSummary.self, from: Data(offloaded.output.utf8))
        #expect(summary.offloadedChunks > 0 && summary.keptChunks == 0 && summary.localOnlyChunks == 0)
        let after = try chunkCounts()
        // Only the device-only blob's chunks stay: they never reach the store.
        #expect(after.offloaded == summary.offloadedChunks)
        #expect(after.local + after.offloaded == before.local && after.local > 0)

        let got = try get("big", server)
        #expect(got.bytes.map { $0 == blob } == true, "\(got.error)")
        #expect(try get("local", server).bytes.map { $0 == blob } == true)
        try expectRestored(tree, into: "restored", server)
        let dumped = try run(["dump", "docs", "text"], server)
        #expect(dumped.output == String(repeating: "a", count: 700_000), "\(dumped.error)")
        let verified = try run(["verify", "--read-data"], server)
        #expect(verified.status == 0, "\(verified.output)\(verified.error)")
        // Nothing was kept: the budget is none.
        #expect(try chunkCounts().local == after.local)

        // A new backup after offloading: its new content is pushed and offloaded by the push, the
        // rest deduplicates against the store.
        try Data(repeating: 0x62, count: 300_000).write(to: tree.appendingPathComponent("more"))
        let backup = try run(["backup", tree.path, "--name", "docs", "--json"], server)
        #expect(backup.status == 0, "\(backup.error)")
        #expect(try run(["push", remote], server).status == 0)
        // Only the new snapshot's tree stays besides what stayed before (trees and chunk lists always
        // stay: forgetting or replacing a record reads them).
        let again = try run(["offload", remote, "--json"], server)
        let summaryAgain = try JSONDecoder().decode(OffloadSummary.self, from: Data(again.output.utf8))
        #expect(summary.structureChunks > 0 && summaryAgain.structureChunks > summary.structureChunks)
        #expect(summaryAgain.offloadedChunks == 0, "the push offloaded what it stored")
        #expect(try chunkCounts().local == after.local + summaryAgain.structureChunks - summary.structureChunks)
        try expectRestored(tree, into: "restored-again", server)
    }

    @Test("the cache keeps at most --keep of content, most recently read first", arguments: ["seaweedfs"])
    func cacheBudget(server name: String) throws {
        let server = try server(name)
        let (blob, _) = try fillAndPush(server)
        let budget = 1 << 20
        #expect(try run(["offload", remote, "--keep", "1M"], server).status == 0)
        for _ in 0..<2 {
            let got = try get("big", server)
            #expect(got.bytes.map { $0 == blob } == true, "\(got.error)")
            let cached = try cachedBytes()
            #expect(cached > 0 && cached <= budget)
        }
    }

    @Test("a read larger than the cache keeps what it read first instead of churning through the cache")
    func readLargerThanCache() throws {
        let server = try SeaweedFS.shared()
        let (blob, _) = try fillAndPush(server)
        #expect(try run(["offload", remote, "--keep", "1M"], server).status == 0)
        let got = try get("big", server)
        #expect(got.bytes.map { $0 == blob } == true, "\(got.error)")
        let vault = try Vault.open(at: directory.path("vault"))
        defer { vault.close() }
        try vault.unlock(passphrase: "pw")
        guard case .inline(let entries) = try vault.blobs.reader().manifest(of: "big").chunks else {
            Issue.record("the test blob's chunk list is not inline")
            return
        }
        let cached = try vault.environment.read { txn -> Set<ChunkID> in
            var ids: Set<ChunkID> = []
            try StoreContent(schema: vault.schema)?.forEachCached(in: txn) { id, _, _ in
                ids.insert(id)
                return true
            }
            return ids
        }
        // The blob is 2.5 MB and the cache 1 MiB: it holds chunks read first (readers fetch a few
        // windows ahead in parallel), none of the last ones, which an LRU admission would keep.
        #expect(!cached.isEmpty)
        let early = Set(entries.prefix(cached.count + 12).map(\.id))
        #expect(cached.isSubset(of: early), "\(cached.count) cached of \(entries.count)")
    }

    @Test(
        "a compaction on another device moves what this one offloaded; its next pull finds it again",
        arguments: ["seaweedfs", "moto"]
    )
    func compactionElsewhere(server name: String) throws {
        let server = try server(name)
        let (blob, tree) = try fillAndPush(server)
        #expect(try run(["offload", remote], server).status == 0)
        #expect(try run(["init", "--join", remote], server, vault: "b").status == 0)
        let compacted = try run(["remote", "compact", remote], server, vault: "b")
        #expect(compacted.status == 0, "\(compacted.error)")

        let stale = try get("big", server)
        #expect(stale.bytes == nil)
        #expect(stale.error.contains("coffer pull"), "\(stale.error)")
        #expect(try run(["pull", remote], server).status == 0)
        #expect(try get("big", server).bytes.map { $0 == blob } == true)
        try expectRestored(tree, into: "restored", server)
        #expect(try run(["verify", "--read-data"], server).status == 0)
    }

    /// The bytes of the files in vault directory `name`.
    @Test(
        "a thin join keeps records and structure only; every reader, a backup, a compaction and the cache budget work there",
        arguments: ["seaweedfs", "moto"]
    )
    func thinJoin(server name: String) throws {
        let server = try server(name)
        let (blob, tree) = try fillAndPush(server)
        let joined = try run(["init", "--join", remote, "--thin", "--json"], server, vault: "thin")
        #expect(joined.status == 0, "\(joined.error)")
        #expect(joined.output.contains("\"thin\""), "\(joined.output)")
        // It read each bundle's records object, not the bundle (docs/FORMAT.md, "Records objects").
        let (client, layout) = try store(server)
        let bundleBytes = try client.list(prefix: layout.listingPrefix).filter { $0.key.hasSuffix(".bundle") }
            .reduce(0) { $0 + $1.size }
        let pulled = try JSONSerialization.jsonObject(with: Data(joined.output.utf8)) as? [String: Any]
        let pulledBytes = try #require((pulled?["pulled"] as? [String: Any])?["bytes"] as? Int)
        #expect(pulledBytes * 8 < bundleBytes, "pulled \(pulledBytes) of \(bundleBytes)")
        let whole = try chunkCounts()
        let thin = try chunkCounts("thin")
        // What stays here is the chunk lists and snapshot trees: a few chunks, against the dozens of
        // the whole vault (the device-only blob's aside, which never left it).
        #expect(thin.offloaded > 0 && thin.local > 0 && thin.local * 4 < whole.local, "\(thin) \(whole)")
        let used = try diskUsage("thin")
        #expect(used < 3 * 1_048_576, "\(used) bytes")

        let got = try get("big", server, vault: "thin")
        #expect(got.bytes.map { $0 == blob } == true, "\(got.error)")
        try expectRestored(tree, into: "restored", server, vault: "thin")
        let dumped = try run(["dump", "docs", "text"], server, vault: "thin")
        #expect(dumped.output == String(repeating: "a", count: 700_000), "\(dumped.error)")
        let verified = try run(["verify", "--read-data"], server, vault: "thin")
        #expect(verified.status == 0, "\(verified.output)\(verified.error)")
        #expect(try chunkCounts("thin").local == thin.local, "the budget is none: nothing read was kept")

        // A backup on the thin vault sends only what is new, and keeps none of it once pushed.
        try Data(SplitMix64.bytes(400_000, seed: 99)).write(to: tree.appendingPathComponent("new"))
        let backup = try run(["backup", tree.path, "--name", "docs", "--json"], server, vault: "thin")
        #expect(backup.status == 0, "\(backup.error)")
        #expect(try run(["push", remote], server, vault: "thin").status == 0)
        let afterPush = try chunkCounts("thin")
        #expect(afterPush.local <= thin.local + 4, "\(afterPush) against \(thin): the new snapshot's tree, no content")

        // The whole vault gets the thin one's backup; a compaction there moves everything the thin
        // one reads, and its next pull finds it again.
        #expect(try run(["pull", remote], server).status == 0)
        try expectRestored(tree, into: "restored-whole", server)
        #expect(try run(["remote", "compact", remote], server).status == 0)
        #expect(try run(["pull", remote], server, vault: "thin").status == 0)
        try expectRestored(tree, into: "restored-after-compaction", server, vault: "thin")
        #expect(try get("big", server, vault: "thin").bytes.map { $0 == blob } == true)

        // With a budget, reads fill the cache up to it and no further.
        let budgeted = try run(["init", "--join", remote, "--thin", "--keep", "1M"], server, vault: "cached")
        #expect(budgeted.status == 0, "\(budgeted.error)")
        #expect(try get("big", server, vault: "cached").bytes.map { $0 == blob } == true)
        let cached = try cachedBytes("cached")
        #expect(cached > 0 && cached <= 1 << 20)
    }

    @Test("--thin needs a join from a store, and --keep needs --thin: usage errors that create nothing")
    func thinUsage() throws {
        let server = try SeaweedFS.shared()
        for (arguments, text) in [
            (["init", "--join", "some.bundle", "--thin"], "--thin joins from an object store"),
            (["init", "--thin"], "--thin joins from an object store"),
            (["init", "--join", remote, "--keep", "1M"], "give --thin too"),
        ] {
            let result = try run(arguments, server, vault: "nothing")
            #expect(result.status == 64, "\(arguments): \(result.error)")
            #expect(result.error.contains(text), "\(arguments): \(result.error)")
            #expect(!FileManager.default.fileExists(atPath: directory.path("nothing").path))
        }
    }

    @Test("a damaged object in the store: reads of what lay in it fail naming it, and verify reports it")
    func damagedObject() throws {
        let server = try SeaweedFS.shared()
        _ = try fillAndPush(server)
        #expect(try run(["offload", remote], server).status == 0)
        let (client, layout) = try store(server)
        let bundles = try client.list(prefix: layout.listingPrefix).filter { $0.key.hasSuffix(".bundle") }
        #expect(bundles.count == 1)
        for object in bundles {
            var bytes = try #require(try client.get(object.key))
            // Every byte past the header's first kilobytes: each segment fails to authenticate.
            for index in stride(from: bytes.count / 2, to: bytes.count, by: 4096) { bytes[index] ^= 0x01 }
            try client.put(object.key, body: bytes)
        }
        let got = try get("big", server)
        #expect(got.bytes == nil)
        #expect(got.error.contains("does not authenticate") || got.error.contains("not where"), "\(got.error)")
        let verified = try run(["verify", "--read-data"], server)
        #expect(verified.status != 0, "\(verified.output)")
        #expect(try get("local", server).bytes != nil)
    }

    /// A's content, also pushed by B (which got it from A's bundle file), offloaded by A after it
    /// pulled B's bundle: the chunks lie in A's object and in B's. Returns the content.
    func sameContentInTwoObjects(_ server: SeaweedFS) throws -> [UInt8] {
        let blob = SplitMix64.bytes(300_000, seed: 5)
        try Data(blob).write(to: directory.path("f1"))
        #expect(try run(["put", "f1", directory.path("f1").path], server).status == 0)
        #expect(try run(["export", "--out", directory.path("a0.bundle").path], server).status == 0)
        let joined = try run(["init", "--join", directory.path("a0.bundle").path], server, vault: "b")
        #expect(joined.status == 0, "\(joined.error)")
        #expect(try run(["push", remote, "--create-bucket"], server).status == 0)
        let pushed = try run(["push", remote], server, vault: "b")
        #expect(pushed.status == 0 && pushed.output.contains("chunk"), "\(pushed.output)")
        #expect(try run(["pull", remote], server).status == 0)
        let offloaded = try run(["offload", remote], server)
        #expect(offloaded.status == 0, "\(offloaded.error)")
        #expect(try chunkCounts().offloaded > 0)
        return blob
    }

    /// `bytes` put as blob "f1" in the vault, which makes the bucket with its first push.
    func putAndPush(_ bytes: [UInt8], _ server: SeaweedFS) throws {
        try Data(bytes).write(to: directory.path("f1"))
        #expect(try run(["put", "f1", directory.path("f1").path], server).status == 0)
        #expect(try run(["push", remote, "--create-bucket"], server).status == 0)
    }

    /// Every bundle object device `name`'s vault pushed.
    func bundles(of name: String, _ server: SeaweedFS) throws -> [String] {
        let vault = try Vault.open(at: directory.path(name))
        let device = vault.deviceID.uuidString.lowercased()
        vault.close()
        let (client, layout) = try store(server)
        return try client.list(prefix: layout.listingPrefix).map(\.key)
            .filter { $0.contains("/\(device)/") && $0.hasSuffix(".bundle") }
    }

    @Test(
        "the other device's object that also held offloaded content is deleted or overwritten: reads, verify, push and compaction use the vault's own (red team round 38, F1)",
        arguments: ["delete", "overwrite"]
    )
    func anotherCopyIsRead(thief: String) throws {
        let server = try SeaweedFS.shared()
        let blob = try sameContentInTwoObjects(server)
        let (client, _) = try store(server)
        for key in try bundles(of: "b", server) {
            if thief == "delete" {
                try client.delete(key)
            } else {
                let size = try #require(try client.get(key)).count
                try client.put(key, body: SplitMix64.bytes(size, seed: 9))
            }
        }
        let got = try get("f1", server)
        #expect(got.bytes.map { $0 == blob } == true, "\(got.error)")
        let verified = try run(["verify", "--read-data"], server)
        #expect(verified.status == 0, "\(verified.output)\(verified.error)")
        try add("later", server)
        let pushed = try run(["push", remote], server)
        #expect(pushed.status == 0, "\(pushed.error)")
        let compacted = try run(["remote", "compact", remote], server)
        #expect(compacted.status == 0, "\(compacted.error)")
        #expect(try run(["pull", remote], server).status == 0)
        #expect(try get("f1", server).bytes.map { $0 == blob } == true)
    }

    @Test(
        "a vault that noted one place per chunk (an older Coffer) finds the content in the store's other objects at its next pull"
    )
    func olderVaultSearchesTheStore() throws {
        let server = try SeaweedFS.shared()
        let blob = try sameContentInTwoObjects(server)
        // As an older Coffer left it: one place noted per chunk (its own object), nothing read whole.
        let vault = try Vault.open(at: directory.path("vault"))
        let table = try #require(vault.schema.storeContent)
        try vault.environment.write { txn in
            var keys: [[UInt8]] = []
            try txn.forEach(in: table) { key, _ in
                if let kind = key.first, kind >= 7 { keys.append(Array(key)) }
                return true
            }
            for key in keys { try txn.delete(table, key: key) }
        }
        vault.close()
        let (client, _) = try store(server)
        for key in try bundles(of: "vault", server) { try client.delete(key) }
        let stale = try get("f1", server)
        #expect(stale.bytes == nil && stale.error.contains("coffer pull"), "\(stale.error)")
        let pulled = try run(["pull", remote], server)
        #expect(pulled.status == 0, "\(pulled.error)")
        #expect(!(pulled.output + pulled.error).contains("lie in no object"), "\(pulled.output)\(pulled.error)")
        #expect(try get("f1", server).bytes.map { $0 == blob } == true)
    }

    @Test(
        "a store rolled back past offloaded content: the loss is reported, and pushes, compactions and newcomers go on with the rest (red team round 38, F2)"
    )
    func rolledBackPastOffloadedContent() throws {
        let server = try SeaweedFS.shared()
        let kept = SplitMix64.bytes(200_000, seed: 11)
        try putAndPush(kept, server)
        let (client, layout) = try store(server)
        var saved: [String: [UInt8]] = [:]
        for object in try client.list(prefix: layout.listingPrefix) { saved[object.key] = try client.get(object.key) }
        try Data(SplitMix64.bytes(200_000, seed: 12)).write(to: directory.path("f2"))
        #expect(try run(["put", "f2", directory.path("f2").path], server).status == 0)
        #expect(try run(["offload", remote], server).status == 0)
        for object in try client.list(prefix: layout.listingPrefix) where saved[object.key] == nil {
            try client.delete(object.key)
        }
        for (key, bytes) in saved { try client.put(key, body: bytes) }

        let pulled = try run(["pull", remote], server)
        #expect(pulled.status == 0, "\(pulled.error)")
        #expect((pulled.output + pulled.error).contains("lie in no object"), "\(pulled.output)\(pulled.error)")
        try add("x1", server)
        let pushed = try run(["push", remote], server)
        #expect(pushed.status == 0, "\(pushed.error)")
        #expect((pushed.output + pushed.error).contains("left out"), "\(pushed.output)\(pushed.error)")
        let again = try run(["push", remote], server)
        #expect(again.status == 0, "\(again.error)")
        let compacted = try run(["remote", "compact", remote], server)
        #expect(compacted.status == 0, "\(compacted.error)")
        let verified = try run(["verify", "--read-data"], server)
        #expect(verified.status != 0, "the lost content is named: \(verified.output)")

        // A newcomer gets the item written after the loss and what the store still holds.
        let joined = try run(["init", "--join", remote], server, vault: "d")
        #expect(joined.status == 0, "\(joined.error)")
        let item = try run(["item", "get", "--service", "x1", "--account", "ann"], server, vault: "d")
        #expect(item.output == "x1", "\(item.error)")
        #expect(try get("f1", server, vault: "d").bytes.map { $0 == kept } == true)
        #expect(try get("f1", server).bytes.map { $0 == kept } == true)
    }

    @Test(
        "a thin device, the only one left holding a lost device's changes, compacts past its overwritten bundle: newcomers get the rest (red team round 39, F1)"
    )
    func thinDeviceCompactsPastAnOverwrittenBundle() throws {
        let server = try SeaweedFS.shared()
        try putAndPush(SplitMix64.bytes(300_000, seed: 21), server)
        let first = try bundles(of: "vault", server)
        try add("a2", server)
        #expect(try run(["push", remote], server).status == 0)
        let joined = try run(["init", "--join", remote, "--thin"], server, vault: "thin")
        #expect(joined.status == 0, "\(joined.error)")
        // The first device is lost; someone who may write to the store overwrites its first bundle.
        let (client, _) = try store(server)
        for key in first {
            let size = try #require(try client.get(key)).count
            try client.put(key, body: SplitMix64.bytes(size, seed: 22))
        }
        let compacted = try run(["remote", "compact", remote], server, vault: "thin")
        #expect(compacted.status == 0, "\(compacted.error)")
        #expect((compacted.output + compacted.error).contains("left out"), "\(compacted.output)\(compacted.error)")
        let newcomer = try run(["init", "--join", remote], server, vault: "d")
        #expect(newcomer.status == 0, "\(newcomer.error)")
        #expect(try holds("a2", server, vault: "d"))
        #expect(try holds("a2", server, vault: "thin"))
    }

    @Test(
        "an object overwritten while a thin vault reads and pulls, then put back: its next compaction keeps what it holds (red team round 40, F1)"
    )
    func objectPutBackCountsAgain() throws {
        let server = try SeaweedFS.shared()
        let blob = SplitMix64.bytes(300_000, seed: 31)
        try putAndPush(blob, server)
        #expect(try run(["init", "--join", remote, "--thin"], server, vault: "thin").status == 0)
        let (client, _) = try store(server)
        let key = try #require(try bundles(of: "vault", server).first)
        let original = try #require(try client.get(key))
        try client.put(key, body: SplitMix64.bytes(original.count, seed: 32))
        #expect(try get("f1", server, vault: "thin").bytes == nil)
        #expect(try run(["pull", remote], server, vault: "thin").status == 0)
        try client.put(key, body: original)

        let compacted = try run(["remote", "compact", remote], server, vault: "thin")
        #expect(compacted.status == 0, "\(compacted.error)")
        #expect(!(compacted.output + compacted.error).contains("left out"), "\(compacted.output)\(compacted.error)")
        #expect(try get("f1", server, vault: "thin").bytes.map { $0 == blob } == true)
        #expect(try run(["init", "--join", remote], server, vault: "d").status == 0)
        #expect(try get("f1", server, vault: "d").bytes.map { $0 == blob } == true)
    }

    @Test("with the store out of reach, offloaded reads fail naming it and local content stays readable")
    func storeOutOfReach() throws {
        let server = try SeaweedFS.shared()
        let (blob, tree) = try fillAndPush(server)
        #expect(try run(["offload", remote], server).status == 0)
        let denied = ["AWS_SECRET_ACCESS_KEY": "not-the-secret"]
        let got = try get("big", server, extra: denied)
        #expect(got.bytes == nil)
        #expect(got.error.contains(remote), "\(got.error)")
        #expect(try get("local", server, extra: denied).bytes.map { $0 == blob } == true)
        #expect(try run(["put", "new", directory.path("blob.bin").path], server, extra: denied).status == 0)

        // A restore that fails leaves no partial file under a final name.
        let target = directory.path("partial")
        let restored = try run(["restore", "docs", "--target", target.path], server, extra: denied)
        #expect(restored.status != 0)
        let walker = FileManager.default.enumerator(at: target, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = walker?.nextObject() as? URL {
            guard (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true else { continue }
            let relative = String(url.path.dropFirst(target.path.count + 1))
            #expect(!relative.contains(".coffer-restore-"), "\(relative)")
            #expect(
                try Data(contentsOf: url) == Data(contentsOf: tree.appendingPathComponent(relative)),
                "\(relative) is partial"
            )
        }

        // Snapshot trees and chunk lists stay here: listing a snapshot, and dropping one (which reads
        // its tree to release what it references), need no store.
        #expect(try run(["show", "docs"], server, extra: denied).status == 0)
        try Data(repeating: 0x63, count: 200_000).write(to: tree.appendingPathComponent("later"))
        #expect(try run(["backup", tree.path, "--name", "docs"], server, extra: denied).status == 0)
        let forgot = try run(["forget", "--keep-last", "1"], server, extra: denied)
        #expect(forgot.status == 0, "\(forgot.error)")
        #expect(try run(["rm", "big"], server, extra: denied).status == 0)
        let verified = try run(["verify"], server, extra: denied)
        #expect(verified.status == 0, "\(verified.output)\(verified.error)")
    }
}
