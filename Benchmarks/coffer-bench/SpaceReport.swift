import Coffer
import Foundation

/// `--space`: what a vault spends its disk on, beside restic's repository for the same tree in the
/// same run. Each tree (the real one, and 2,000 small text files from `/usr/include`) is backed up
/// once into a fresh vault and a fresh restic repository; the vault's bytes are then split, from
/// LMDB's own page counts (`mdb_stat` per table, the free list) and each chunk record's size, into:
///
/// - chunk payload of files and of tree nodes (the snapshot's tree stream and its list chunks):
///   header, nonce, compressed ciphertext and tag, as sealed;
/// - LMDB overflow rounding: a value too large for a leaf takes whole pages of its own, and the rest
///   of its last page is lost;
/// - the chunks table's B-tree (keys, and small values' leaf pages less the values themselves);
/// - the other tables (reference counts, snapshot records, metadata), LMDB's meta pages;
/// - free pages, which only `coffer compact` gives back, and the files beside `data.mdb`.
enum SpaceReport {
    /// One line of the decomposition.
    struct Part: Encodable {
        let part: String
        let bytes: Int64
    }

    /// One tree's figures.
    struct TreeSpace: Encodable {
        let tree: String
        let treeBytes: Int
        let files: Int
        let parts: [Part]
        /// Every file of the vault's directory, as `du --apparent-size` counts them.
        let vaultBytes: Int64
        /// The vault after `compact` (the data file copied without its free pages).
        let compactedVaultBytes: Int64
        /// restic's repository, as `du --apparent-size` counts it; `nil` without restic.
        let resticBytes: Int64?
    }

    static func run(tree: SnapshotSuite.Tree, jsonPath: String?) throws {
        try tree.prepare()
        defer { tree.remove() }
        let small = SnapshotSuite.Tree(source: .given(try smallFiles().path), label: " (2,000 small files)")
        try small.prepare()
        defer { try? FileManager.default.removeItem(atPath: small.path) }
        var results: [TreeSpace] = []
        for (label, measured) in [("real tree", tree), ("2,000 small text files", small)] {
            let space = try measure(label: label, tree: measured)
            results.append(space)
            printSpace(space)
            print("")
        }
        if let jsonPath {
            try reportJSON(["trees": results]).write(to: URL(fileURLWithPath: jsonPath))
        }
    }

    /// The first 2,000 regular files of 16 KiB or less under `/usr/include`, by path, copied flat
    /// into a scratch directory (30 subdirectories).
    static func smallFiles() throws -> URL {
        let root = scratchDirectory()
        guard let walker = FileManager.default.enumerator(atPath: "/usr/include") else {
            throw BenchmarkError("cannot read /usr/include")
        }
        var candidates: [String] = []
        while let relative = walker.nextObject() as? String {
            let attributes = try? FileManager.default.attributesOfItem(atPath: "/usr/include/" + relative)
            guard attributes?[.type] as? FileAttributeType == .typeRegular,
                let size = attributes?[.size] as? Int, size > 0, size <= 16 << 10
            else { continue }
            candidates.append(relative)
        }
        candidates.sort()
        guard candidates.count >= 2000 else { throw BenchmarkError("/usr/include has under 2,000 small files") }
        for (index, relative) in candidates.prefix(2000).enumerated() {
            let directory = root.appendingPathComponent("d\(index % 30)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                atPath: "/usr/include/" + relative,
                toPath: directory.appendingPathComponent("\(index)-" + URL(fileURLWithPath: relative).lastPathComponent)
                    .path
            )
        }
        return root
    }

    /// Sums the apparent sizes of the regular files under `path`.
    static func apparentSize(_ path: String) -> Int64 {
        guard let walker = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total: Int64 = 0
        while let relative = walker.nextObject() as? String {
            let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + relative)
            if attributes?[.type] as? FileAttributeType == .typeRegular {
                total += Int64(attributes?[.size] as? Int ?? 0)
            }
        }
        return total
    }

    static func measure(label: String, tree: SnapshotSuite.Tree) throws -> TreeSpace {
        let scratch = try BlobSuite.Scratch()
        defer { scratch.remove() }
        let vault = scratch.vault
        _ = try vault.snapshots.backup(directory: URL(fileURLWithPath: tree.path), name: "bench")
        let treeChunks = try treeChunkIDs(vault)
        let environment = vault.environment
        let schema = vault.schema
        var tables = Schema.tableNames.map { $0 }
        var handles = [
            schema.meta, schema.items, schema.itemIndex, schema.chunks, schema.chunkRefs, schema.blobs,
            schema.snapshots, schema.pending, schema.changes, schema.versions, schema.peers,
        ]
        if let journal = schema.journal {
            tables.append("journal")
            handles.append(journal)
        }
        if let packs = schema.packs {
            tables += ChunkPackTables.names
            handles += [packs.locators, packs.packs, packs.usage]
        }
        let pages = try environment.read { txn in try handles.map { try txn.pages($0) } }
        let pageSize = pages[0].pageSize
        var filePayload: Int64 = 0
        var treePayload: Int64 = 0
        var fileRounding: Int64 = 0
        var treeRounding: Int64 = 0
        var inlineValues: Int64 = 0
        var packValues: Int64 = 0
        var packDirectories: Int64 = 0
        try environment.read { txn in
            try schema.records.forEach(in: txn) { key, value in
                if treeChunks.contains(Array(key)) {
                    treePayload += Int64(value.count)
                } else {
                    filePayload += Int64(value.count)
                }
                return true
            }
            // Records on their own round up to whole pages, or sit in the chunks table's leaves.
            try txn.forEach(in: schema.chunks) { key, value in
                let overflow = TablePages.overflowPages(valueSize: value.count, keySize: key.count, pageSize: pageSize)
                let rounding = overflow > 0 ? Int64(overflow * pageSize - value.count) : 0
                if overflow == 0 { inlineValues += Int64(value.count) }
                if treeChunks.contains(Array(key)) {
                    treeRounding += rounding
                } else {
                    fileRounding += rounding
                }
                return true
            }
            if let packs = schema.packs {
                try txn.forEach(in: packs.packs) { _, pack in
                    packValues += Int64(pack.count)
                    packDirectories += Int64(pack.count - (try ChunkPack.recordsEnd(of: pack)))
                    return true
                }
            }
        }
        let space = try environment.space()
        let chunkPages = pages[3]
        let chunkTree = Int64(chunkPages.branchPages + chunkPages.leafPages) * Int64(pageSize) - inlineValues
        let packPages = zip(tables, pages).filter { ChunkPackTables.names.contains($0.0) }
        // The packs' pages less their records and directories: rounding of the last page of each.
        let packsTable = packPages.first { $0.0 == "chunkPacks" }?.1.bytes ?? 0
        let packRounding = packsTable - packValues
        let indexTrees = packPages.filter { $0.0 != "chunkPacks" }.reduce(Int64(0)) { $0 + $1.1.bytes }
        let otherTables = zip(tables, pages).filter { $0.0 != "chunks" && !ChunkPackTables.names.contains($0.0) }
            .reduce(Int64(0)) { $0 + $1.1.bytes }
        let accounted = pages.reduce(Int64(0)) { $0 + $1.bytes } + space.freeBytes
        let vaultBytes = apparentSize(scratch.directory.path)
        let dataFile = space.fileBytes
        var parts = [
            Part(part: "chunk payload: file content (compressed, sealed)", bytes: filePayload),
            Part(part: "chunk payload: tree nodes (tree stream, list chunks)", bytes: treePayload),
            Part(part: "LMDB overflow-page rounding of file chunks stored alone", bytes: fileRounding),
            Part(part: "LMDB overflow-page rounding of tree chunks stored alone", bytes: treeRounding),
            Part(part: "pack directories (id and length of each packed record)", bytes: packDirectories),
            Part(part: "packs' B-tree and the rounding of their last pages", bytes: packRounding),
            Part(part: "chunks table B-tree (keys, leaf and branch pages less small values)", bytes: chunkTree),
            Part(part: "packed chunks' locators and pack usage (B-trees)", bytes: indexTrees),
            Part(part: "other tables (chunk refcounts, snapshot records, metadata, journal)", bytes: otherTables),
            Part(part: "free pages (given back by compact)", bytes: space.freeBytes),
            Part(part: "LMDB meta pages, the main table, file tail", bytes: dataFile - accounted),
            Part(
                part: "files beside data.mdb (the space reserve, lock file, records)",
                bytes: vaultBytes - dataFile
            ),
        ]
        parts = parts.filter { $0.bytes != 0 }
        // The compacted size: the data file copied without free pages.
        vault.close()
        _ = try Vault.compactDataFile(at: scratch.directory)
        let compacted = apparentSize(scratch.directory.path)
        return TreeSpace(
            tree: label,
            treeBytes: tree.bytes,
            files: treeFileCount(tree.path),
            parts: parts,
            vaultBytes: vaultBytes,
            compactedVaultBytes: compacted,
            resticBytes: try resticSize(tree.path)
        )
    }

    static func treeFileCount(_ path: String) -> Int {
        guard let walker = FileManager.default.enumerator(atPath: path) else { return 0 }
        var count = 0
        while let relative = walker.nextObject() as? String {
            if (try? FileManager.default.attributesOfItem(atPath: path + "/" + relative))?[.type] as? FileAttributeType
                == .typeRegular
            {
                count += 1
            }
        }
        return count
    }

    /// The ids of every snapshot's tree chunks: the tree stream's chunks and its list chunks.
    static func treeChunkIDs(_ vault: Vault) throws -> Set<[UInt8]> {
        let keys = try vault.keyRing()
        let snapshots = vault.snapshots
        let store = snapshots.snapshotStore(keys)
        let coder = try ChunkRecord.Coder()
        var ids: Set<[UInt8]> = []
        for record in try store.all(cipher: try snapshots.makeCipher()) {
            let chunkKeys = try ChunkKeys(content: record, keys: keys)
            if case .indirect(let lists) = record.chunks { for list in lists { ids.insert(list.id.bytes) } }
            try record.chunks.forEachEntry(
                loadListChunk: { (reference) throws(CofferError) in
                    try storage("reading a chunk list") {
                        try vault.environment.read { txn in
                            try store.contentStore.listChunkEntries(reference, keys: chunkKeys, coder: coder, in: txn)
                        }
                    }
                },
                { (entry, _) throws(CofferError) in
                    ids.insert(entry.id.bytes)
                    return true
                }
            )
        }
        return ids
    }

    /// `restic init && restic backup` of `path` into a fresh repository (no cache); its size, or
    /// `nil` without restic.
    static func resticSize(_ path: String) throws -> Int64? {
        guard SnapshotSuite.Peer.find("restic") != nil else { return nil }
        let work = scratchDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let repository = work.appendingPathComponent("repo").path
        var environment = ProcessInfo.processInfo.environment
        environment["RESTIC_PASSWORD"] = "bench"
        try runPeer(["restic", "-r", repository, "--no-cache", "init", "-q"], environment: environment)
        try runPeer(["restic", "-r", repository, "--no-cache", "backup", "-q", path], environment: environment)
        return apparentSize(repository)
    }

    static func printSpace(_ space: TreeSpace) {
        func megabytes(_ bytes: Int64) -> String { String(format: "%10.2f MB", Double(bytes) / 1e6) }
        func share(_ bytes: Int64) -> String {
            String(format: "%6.1f%%", Double(bytes) * 100 / Double(space.vaultBytes))
        }
        print("space: \(space.tree), \(space.files) files, \(megabytes(Int64(space.treeBytes))) of content")
        let width = max(space.parts.map(\.part.count).max() ?? 0, 40)
        for part in space.parts {
            print(
                "  " + part.part.padding(toLength: width, withPad: " ", startingAt: 0) + megabytes(part.bytes)
                    + share(part.bytes)
            )
        }
        print(
            "  " + "vault (all files)".padding(toLength: width, withPad: " ", startingAt: 0)
                + megabytes(space.vaultBytes)
        )
        print(
            "  " + "vault after compact".padding(toLength: width, withPad: " ", startingAt: 0)
                + megabytes(space.compactedVaultBytes)
        )
        if let restic = space.resticBytes {
            print(
                "  " + "restic repository (same tree, same run)".padding(toLength: width, withPad: " ", startingAt: 0)
                    + megabytes(restic)
            )
            print(
                String(
                    format: "  vault / restic: %.2fx as written, %.2fx after compact",
                    Double(space.vaultBytes) / Double(restic),
                    Double(space.compactedVaultBytes) / Double(restic)
                )
            )
        }
    }
}
