public import Foundation

/// What ``Vault/compactDataFile(at:)-8n6q4`` did: the data file's size before and after.
public struct DataFileCompaction: Sendable, Equatable {
    /// The size of `data.mdb` before.
    public let bytesBefore: Int64
    /// The size of `data.mdb` after: the live pages only.
    public let bytesAfter: Int64

    /// The space given back to the file system.
    public var bytesReturned: Int64 { max(0, bytesBefore - bytesAfter) }
}

extension Vault {
    /// The name, in the vault's directory, of the compacted copy while it is written.
    package static let compactingFileName = "data.mdb.compacting"

    /// Gives the space of deleted data back to the file system: rewrites the packs of small chunk
    /// records that hold freed ones (docs/FORMAT.md, "Chunk packs"), then writes a copy of the vault's
    /// data file holding only its live pages, flushes it, checks it, and renames it over `data.mdb`.
    ///
    /// LMDB reuses the pages that deletes free, but never shrinks its file; this is how it gets
    /// smaller (what `coffer compact` does). Every step is safe to interrupt: until the rename the old
    /// file is untouched (a partial copy is removed by the next compaction), and the rename swaps one
    /// complete, flushed file for another. The vault must not be open anywhere else, this process
    /// included; a process that opens it meanwhile waits until the compaction ends. The directory
    /// needs free space for the copy, about the size of the live data.
    ///
    /// - Returns: The file's size before and after.
    /// - Throws: ``CofferError``: `.param` while the vault is open elsewhere, `.diskFull` when the
    ///   copy does not fit (nothing is changed), and the errors of ``open(at:configuration:)-yw4k``.
    public static func compactDataFile(at directory: URL) throws(CofferError) -> DataFileCompaction {
        let vault = try open(at: directory)
        defer { vault.close() }
        let environment = vault.environment
        guard environment.takeSoleAccess() else {
            throw CofferError(
                .param,
                "another process (or another open in this one) has the vault at \(directory.path) open; stop it (every command and app using the vault), then compact"
            )
        }
        // LMDB's copy walks every page: a damaged one is named here instead.
        try vault.refuseDamagedTrees(before: "compacting")
        let copy = directory.appendingPathComponent(compactingFileName).path
        Environment.removeCompactedCopy(at: copy)
        let space = try storage("measuring the data file") { try environment.space() }
        let needed = space.liveBytes + (4 << 20)
        if let available = environment.availableBytes, available < needed {
            throw CofferError(
                .diskFull,
                "compacting needs room for a copy of the live data, \(ByteCount.format(needed)), beside the vault, and \(ByteCount.format(available)) is free; free some space and try again (nothing was changed)"
            )
        }
        // Packs holding freed records give their space back only when rewritten (inside the data
        // file, whose free pages the copy then leaves out).
        try storage("rewriting chunk packs") {
            while try !environment.write({ txn in try vault.schema.records.repack(in: txn).done }) {}
        }
        let copied = try storage("writing the compacted copy") { try environment.writeCompactedCopy(to: copy) }
        let bytesAfter: Int64
        do throws(CofferError) {
            try checkCompactedCopy(at: copy, transactionID: copied)
            bytesAfter = try storage("putting the compacted copy in place") {
                try environment.installCompactedCopy(from: copy, transactionID: copied)
            }
        } catch {
            Environment.removeCompactedCopy(at: copy)
            throw error
        }
        return DataFileCompaction(bytesBefore: space.fileBytes, bytesAfter: bytesAfter)
    }

    /// Checks the compacted copy as `coffer verify` checks a data file: its meta pages and length,
    /// then every tree and the free list, each page reached once; and that it holds the state copied.
    private static func checkCompactedCopy(at path: String, transactionID: UInt64) throws(CofferError) {
        guard let check = DataFileCheck(path: path) else {
            throw CofferError(.internalError, "the compacted copy cannot be read back; nothing was changed")
        }
        defer { check.close() }
        let damage = check.damage + check.walk(snapshotID: transactionID)
        guard damage.isEmpty, check.current?.transactionID == transactionID else {
            let what =
                damage.isEmpty ? "it does not hold the state copied" : damage.map(\.description).joined(separator: "; ")
            throw CofferError(.internalError, "the compacted copy failed its check (\(what)); nothing was changed")
        }
    }
}
