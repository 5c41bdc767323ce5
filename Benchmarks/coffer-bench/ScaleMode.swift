import Coffer
import Foundation

/// `--scale`: how the cost of get, find, put and export changes as a vault grows from 10,000 to
/// 1,000,000 items (powers of ten up to `--scale-items`), next to 8 GiB of blobs (`--scale-blob-mib`)
/// written first, with the process's peak resident memory after each stage. Every stage measures on
/// the same vault, grown in place, so the figures differ only by its size.
enum ScaleMode {
    struct Stage: Encodable {
        let items: Int
        /// Microseconds per get by primary key (random items).
        let getMicroseconds: Double
        /// Microseconds per find by a unique attribute (the account).
        let findMicroseconds: Double
        /// Microseconds per upsert committed durably on its own.
        let putMicroseconds: Double
        /// Seconds for a full export (items and blobs).
        let fullExportSeconds: Double
        let fullExportBytes: Int64
        /// Milliseconds for an incremental export of one changed item.
        let incrementalExportMilliseconds: Double
        /// The process's peak resident set during the stage (growing the vault and measuring), in MiB.
        let peakResidentMiB: Double
        /// Of what is resident at the stage's end, the process's own memory (`RssAnon`), in MiB; the
        /// rest is clean page cache of the vault's map, which the kernel can drop at will.
        let anonymousResidentMiB: Double
    }

    struct ScaleReport: Encodable {
        let schemaVersion = 1
        let mode = "scale"
        let machine: MachineDescription
        let date: Date
        let command: String
        let blobBytes: Int64
        let stages: [Stage]
    }

    static func sizes(upTo items: Int) -> [Int] {
        var sizes: [Int] = []
        var size = 10_000
        while size < items {
            sizes.append(size)
            size *= 10
        }
        return sizes + [items]
    }

    static func run(items: Int, blobMiB: Int, batch batchSize: Int, jsonPath: String?) throws {
        let directory = scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("export.bundle")
        var configuration = Vault.Configuration()
        configuration.kdf = .insecureFastForTesting
        configuration.initialMapSize = 1 << 30
        let vault = try Vault.create(
            at: directory.appendingPathComponent("vault"),
            passphrase: "scale",
            configuration: configuration
        )
        defer { vault.close() }

        print("coffer-bench --scale on \(MachineDescription.current.summary)")
        print("writing \(blobMiB) MiB of blobs (mixed text, binary and random content)…")
        var blobBytes: Int64 = 0
        // No base larger than all the blobs together: a small run generates no more than it writes.
        let part = max(1, min(64 << 20, blobMiB << 20))
        // Three bases of up to 64 MiB, generated once; each blob is a base with its number stamped every 4 KiB,
        // so no two blobs share a chunk (FastCDC chunks are at least 16 KiB) and generating 8 GiB
        // costs a copy per blob.
        let bases = [BlobSuite.Corpus.textLike(part), BlobSuite.Corpus.binaryLike(part), BlobSuite.Corpus.random(part)]
        var index = 0
        while blobBytes < Int64(blobMiB) << 20 {
            let size = min(part, Int(Int64(blobMiB) << 20 - blobBytes))
            var content = Array(bases[index % 3].prefix(size))
            content.withUnsafeMutableBytes { raw in
                for offset in stride(from: 0, to: raw.count - 8, by: 4096) {
                    raw.storeBytes(
                        of: UInt64(index << 32 | offset >> 12).bigEndian,
                        toByteOffset: offset,
                        as: UInt64.self
                    )
                }
            }
            try vault.blobs.write("scale/blob-\(index)", data: content)
            blobBytes += Int64(size)
            index += 1
        }

        var stages: [Stage] = []
        var added = 0
        // The content generator's buffers are not the vault's: each stage's peak starts afresh.
        PeakMemory.reset()
        print("items      get µs   find µs    put µs   full export s (size)    incremental ms   peak MiB (own)")
        for size in sizes(upTo: items) {
            while added < size {
                let batch = (added..<min(size, added + batchSize)).map(item)
                try vault.keychain.add(contentsOf: batch)
                added += batch.count
            }
            try vault.export(to: bundle, peer: "scale-peer")
            let stage = try measure(vault, items: size, directory: directory)
            stages.append(stage)
            PeakMemory.reset()
            print(
                String(
                    format: "%-9d %8.2f %9.2f %9.1f %9.2f (%@) %14.2f %10.0f (%.0f)",
                    size,
                    stage.getMicroseconds,
                    stage.findMicroseconds,
                    stage.putMicroseconds,
                    stage.fullExportSeconds,
                    ByteFormat.mebibytes(stage.fullExportBytes),
                    stage.incrementalExportMilliseconds,
                    stage.peakResidentMiB,
                    stage.anonymousResidentMiB
                )
            )
        }
        if let jsonPath {
            let report = ScaleReport(
                machine: .current,
                date: Date(),
                command: (["coffer-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " "),
                blobBytes: blobBytes,
                stages: stages
            )
            try reportJSON(report).write(to: URL(fileURLWithPath: jsonPath))
        }
    }

    /// Item `index`: a syncable generic password with a unique service and account.
    static func item(_ index: Int) -> KeychainItem {
        var item = KeychainItem(
            .genericPassword,
            value: Data("token-\(index)".utf8),
            accessibility: .afterFirstUnlock,
            scope: .syncable
        )
        item.attributes.service = "service-\(index)"
        item.attributes.account = "account-\(index)"
        return item
    }

    static func measure(_ vault: Vault, items: Int, directory: URL) throws -> Stage {
        let bundle = directory.appendingPathComponent("export.bundle")
        let incremental = directory.appendingPathComponent("incremental.bundle")
        var generator = SystemRandomNumberGenerator()
        let keychain = vault.keychain
        let gets = 2_000
        let getTime = try seconds {
            for _ in 0..<gets {
                let index = Int.random(in: 0..<items, using: &generator)
                guard try keychain.password(service: "service-\(index)", account: "account-\(index)") != nil else {
                    throw BenchmarkError("item \(index) is missing")
                }
            }
        }
        let finds = 500
        let findTime = try seconds {
            for _ in 0..<finds {
                var query = ItemQuery(.genericPassword)
                query.attributes.account = "account-\(Int.random(in: 0..<items, using: &generator))"
                guard try keychain.find(query).count == 1 else { throw BenchmarkError("a find did not find one item") }
            }
        }
        let puts = 100
        let putTime = try seconds {
            for _ in 0..<puts { try keychain.upsert(item(Int.random(in: 0..<items, using: &generator))) }
        }
        var exportBytes: Int64 = 0
        let exportTime = try seconds { exportBytes = try vault.export(to: bundle).bytes }
        // Bring the peer up to date, change one item, and time the export of that one change (to a
        // small file of its own: replacing the large bundle would time the file system's unlink).
        try vault.export(to: incremental, peer: "scale-peer")
        try keychain.upsert(item(0))
        let incrementalTime = try seconds {
            guard try vault.export(to: incremental, peer: "scale-peer").records.total == 1 else {
                throw BenchmarkError("the incremental export did not hold exactly the one change")
            }
        }
        return Stage(
            items: items,
            getMicroseconds: getTime / Double(gets) * 1e6,
            findMicroseconds: findTime / Double(finds) * 1e6,
            putMicroseconds: putTime / Double(puts) * 1e6,
            fullExportSeconds: exportTime,
            fullExportBytes: exportBytes,
            incrementalExportMilliseconds: incrementalTime * 1e3,
            peakResidentMiB: PeakMemory.mebibytes(),
            anonymousResidentMiB: PeakMemory.mebibytes(field: "RssAnon:")
        )
    }

    static func seconds(_ body: () throws -> Void) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// The process's peak resident set (`VmHWM`), which writing 5 to `/proc/self/clear_refs` resets.
    enum PeakMemory {
        static func reset() {
            try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
        }

        /// A memory field of `/proc/self/status` in MiB: the peak (`VmHWM:`) unless told otherwise.
        static func mebibytes(field: String = "VmHWM:") -> Double {
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix(field) } ?? ""
            let kilobytes = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
            return kilobytes / 1024
        }
    }

    enum ByteFormat {
        static func mebibytes(_ bytes: Int64) -> String { String(format: "%.0f MiB", Double(bytes) / 1_048_576) }
    }
}
