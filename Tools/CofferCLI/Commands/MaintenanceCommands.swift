import Coffer
import Foundation

// `coffer gc|compact|verify|repair|stats`: looking after the vault's storage.

/// `coffer gc`: frees what writes that crashed left behind.
struct GCCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "gc",
        abstract: "Free chunks left by writes that crashed mid-way.",
        discussion: """
            Deleting a blob frees its chunks at once (reference counts are exact); gc only cleans up after
            a process that died while writing. Writes in progress, in any process, are left alone.
            """,
        examples: [
            "coffer gc                                # after a crash mid-write",
            "coffer gc --json",
        ]
    )

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let report = try vault.blobs.collectGarbage()
        let json = [
            "abandonedWrites": Int64(report.abandonedWrites), "releasedReferences": Int64(report.releasedReferences),
            "freedChunks": Int64(report.freedChunks), "freedBytes": report.freedBytes,
        ]
        try context.output.result(json) {
            "Freed \(counted(report.freedChunks, "chunk")) (\(ByteCount.format(report.freedBytes))); "
                + "\(counted(report.abandonedWrites, "abandoned write")) released \(counted(report.releasedReferences, "reference"))."
        }
    }
}

/// `coffer compact`: gives the space of deleted data back to the file system.
struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "compact",
        abstract: "Give the space of deleted data back to the file system.",
        discussion: """
            LMDB reuses the pages deletes free but never shrinks data.mdb ('coffer info' shows how much
            is free). compact first rewrites the packs of small chunks that hold freed ones, then writes
            a copy holding only the live pages, flushes and checks it, and renames it over data.mdb:
            stopping it at any moment leaves a vault that opens. It needs no passphrase, about the live
            data's size free on the disk, and no other process using the vault.
            """,
        examples: [
            "coffer compact                      # data.mdb shrinks to its live pages",
            "coffer info | grep 'Data file' && coffer compact",
        ]
    )

    func run(_ context: CommandContext) throws {
        let done = try Vault.compactDataFile(at: try context.vaultDirectory())
        try context.output.done(["bytesBefore": done.bytesBefore, "bytesAfter": done.bytesAfter]) {
            "Compacted data.mdb: \(ByteCount.format(done.bytesBefore)) → \(ByteCount.format(done.bytesAfter)) "
                + "(\(ByteCount.format(done.bytesReturned)) given back)."
        }
    }
}

/// `coffer verify`: checks the vault's structure, and with `--read-data` all its content.
struct VerifyCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "verify",
        abstract: "Check the vault's structure; with --read-data, read and check every blob too.",
        discussion: """
            Checks data.mdb's own structure (both meta pages, its length, every B-tree and the free list:
            each page used once and within bounds), that every blob manifest opens, every chunk it lists is
            stored, and every reference count is exact. --read-data also decrypts and decompresses
            everything and recomputes every chunk id and blob digest; --read-data-subset N/M does so for
            slice N of M of the chunks (by id, so the slices 1/M to M/M read each chunk once), X% for a
            random share. Problems are reported per blob, by name, and checking goes on past them. All
            structural checks read one snapshot of the vault, so writers running meanwhile are never
            taken for damage. When data.mdb's structure is damaged, nothing stored in it is read, and
            writes are refused (damage-found) until a verify finds the file sound again.
            Exits 1 if anything is wrong.
            """,
        examples: [
            "coffer verify                         # the structure",
            "coffer verify --read-data             # and every blob and snapshot file",
            "coffer verify --read-data-subset 3/7  # a seventh of the chunks: all of them over 7 runs",
        ]
    )

    @Flag(help: "Read, decrypt and check all content (slower).")
    var readData: Bool

    @Option(value: "N/M|X%", help: "Read and check only slice N of M of the chunks (all over M runs), or X% at random.")
    var readDataSubset: DataSubset?

    func validate() throws {
        if readData, readDataSubset != nil {
            throw ValidationError("give --read-data (everything) or --read-data-subset (a part), not both")
        }
    }

    /// What `verify --json` prints.
    struct Listing: Encodable {
        let healthy: Bool
        let blobs: Int
        let snapshots: Int
        let chunks: Int
        let chunksRead: Int
        let chunkBytesRead: Int64
        let bytesRead: Int64
        let problems: [String]
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        // Reading the content takes long on a large vault: a bar shows the bytes read so far.
        let bar = context.progressBar("verify", total: nil)
        let report =
            try readDataSubset.map { try vault.blobs.verify(readingDataSubset: $0, progress: bar.report) }
            ?? vault.blobs.verify(readingData: readData, progress: bar.report)
        bar.finish()
        let listing = Listing(
            healthy: report.isHealthy,
            blobs: report.blobCount,
            snapshots: report.snapshotCount,
            chunks: report.chunkCount,
            chunksRead: report.chunksRead,
            chunkBytesRead: report.chunkBytesRead,
            bytesRead: report.bytesRead,
            problems: report.problems.map(\.description)
        )
        let problems = report.problems.count == 1 ? "1 problem" : "\(report.problems.count) problems"
        try context.output.result(listing) {
            // Say what was read: a clean structural check says nothing of the stored content.
            var read = ""
            var found = "no problems found."
            if readData {
                read =
                    ";\n\(counted(report.chunksRead, "chunk")) (\(ByteCount.format(report.chunkBytesRead)) stored) decrypted and checked;\n\(ByteCount.format(report.bytesRead)) of blob and snapshot content read and checked"
            } else if let readDataSubset {
                read =
                    ", subset \(readDataSubset): \(counted(report.chunksRead, "chunk")) (\(ByteCount.format(report.bytesRead)) stored) read and checked"
            } else {
                found =
                    "no problems found in the structure (the stored content was not read: `coffer verify --read-data` reads and checks it)."
            }
            return
                (report.problems.map { "damaged: \($0)" } + [
                    "\(counted(report.blobCount, "blob")), \(counted(report.snapshotCount, "snapshot")), \(counted(report.chunkCount, "chunk"))\(read): "
                        + (report.isHealthy ? found : "\(counted(report.problems.count, "problem")) found.")
                ]).joined(separator: "\n")
        }
        if !report.isHealthy {
            throw CLIFailure("verify found \(problems); see above")
        }
    }
}

/// `coffer repair`: rewrites a damaged meta page of `data.mdb`.
struct RepairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "repair",
        abstract: "Rewrite a damaged meta page of data.mdb from what the file can still prove.",
        discussion: """
            LMDB keeps two meta pages and opens the one with the larger transaction id. When exactly one is
            damaged (coffer refuses to open the vault and says so), repair rewrites it: from commit-record
            (coffer's copy of the last committed meta page) when the state it names is intact, so nothing
            is lost; else a page whose transaction id was altered gets back the id its tree records, and a
            page whose header or magic was hit is rewritten if the rest agrees with its tree, else copied
            from the intact page. A repair that can only go back to an older state, losing the last
            committed transaction, says what it cannot recover and changes nothing unless --accept-loss is
            given; then it says what was lost. Needs no passphrase; refuses while another process has the
            vault open. Anything else (a file cut short, damaged tree pages) needs a copy of the vault.
            """,
        examples: [
            "coffer repair                         # a damaged meta page, when it can be proven",
            "coffer repair --accept-loss           # go back to the newest state that can be recovered",
            "coffer repair && coffer verify --read-data",
        ]
    )

    @Flag(help: "Allow going back to an older state when the last committed one cannot be recovered.")
    var acceptLoss: Bool

    func run(_ context: CommandContext) throws {
        let done = try Vault.repairDataFile(at: try context.vaultDirectory(), acceptingLoss: acceptLoss)
        try context.output.status(["repaired": done]) {
            "Repaired: \(done). Run coffer verify --read-data to check the rest."
        }
    }
}

/// `coffer stats`: what the vault holds, and what deduplication and compression save.
struct StatsCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "stats",
        abstract: "Show how much the blobs hold and what deduplication and compression save.",
        examples: [
            "coffer stats                          # logical, after dedup, stored",
            "coffer stats --json | jq .deduplicationRatio",
        ]
    )

    /// What `stats --json` prints.
    struct Listing: Encodable {
        let blobs: Int
        let blobBytes: Int64
        let snapshots: Int
        let snapshotBytes: Int64
        let logicalBytes: Int64
        let chunks: Int
        let uniqueBytes: Int64
        let storedBytes: Int64
        let deduplicationRatio: Double
        let compressionRatio: Double
        /// Every file in the vault's directory, as `du` counts it.
        let vaultFileBytes: Int64
        /// `data.mdb` alone.
        let dataFileBytes: Int64
        /// Its pages in use: the stored chunks and the database's own pages.
        let liveBytes: Int64
        /// Its pages free for reuse.
        let freeBytes: Int64
    }

    /// The sizes of the regular files in `directory`.
    static func directorySize(_ directory: URL) -> Int64 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.reduce(0) { total, name in
            let attributes = try? FileManager.default.attributesOfItem(
                atPath: directory.appendingPathComponent(name).path
            )
            guard attributes?[.type] as? FileAttributeType == .typeRegular else { return total }
            return total + ((attributes?[.size] as? NSNumber)?.int64Value ?? 0)
        }
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let stats = try vault.blobs.statistics()
        let info = try vault.info()
        let vaultFiles = Self.directorySize(try context.vaultDirectory())
        let live = Int64(info.liveBytes)
        let free = Int64(max(0, info.fileBytes - info.liveBytes))
        let listing = Listing(
            blobs: stats.blobCount,
            blobBytes: stats.blobBytes,
            snapshots: stats.snapshotCount,
            snapshotBytes: stats.snapshotBytes,
            logicalBytes: stats.logicalBytes,
            chunks: stats.chunkCount,
            uniqueBytes: stats.uniqueBytes,
            storedBytes: stats.storedBytes,
            deduplicationRatio: stats.deduplicationRatio,
            compressionRatio: stats.compressionRatio,
            vaultFileBytes: vaultFiles,
            dataFileBytes: Int64(info.fileBytes),
            liveBytes: live,
            freeBytes: free
        )
        // What the files on disk hold, so that stored plus the rest adds up to what du shows.
        let own = max(0, live - stats.storedBytes)
        let others = max(0, vaultFiles - Int64(info.fileBytes))
        let onDisk =
            "\(ByteCount.format(vaultFiles)) in the vault's files: \(ByteCount.format(stats.storedBytes)) stored "
            + "chunks, \(ByteCount.format(own)) the database's own pages (records, indexes, page rounding), "
            + "\(ByteCount.format(free)) free for reuse, \(ByteCount.format(others)) other files (lock, reserve)"
        try context.output.result(listing) {
            LabeledRows.text(
                [
                    ("blobs", "\(stats.blobCount) (\(ByteCount.format(stats.blobBytes)))"),
                    (
                        "snapshots",
                        "\(stats.snapshotCount) (\(ByteCount.format(stats.snapshotBytes)) of files, each snapshot in full)"
                    ),
                    ("logical size", "\(ByteCount.format(stats.logicalBytes)) (blobs and snapshot files)"),
                    (
                        "after dedup",
                        "\(ByteCount.format(stats.uniqueBytes)) (\(String(format: "%.2f", stats.deduplicationRatio))×)"
                    ),
                    (
                        "stored",
                        "\(ByteCount.format(stats.storedBytes)) (compression \(String(format: "%.2f", stats.compressionRatio))×)"
                    ),
                    (
                        "chunks",
                        "\(stats.chunkCount) stored (content and list chunks of every blob and snapshot, each once)"
                    ),
                    ("on disk", onDisk),
                ],
                width: context.console.outputColumns
            )
        }
    }
}
