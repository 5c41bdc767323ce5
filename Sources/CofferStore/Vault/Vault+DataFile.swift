public import Foundation
internal import Glibc

extension Vault {
    /// Refuses to open a vault whose `data.mdb` is damaged in a way LMDB would not notice or would
    /// crash on: cut short (LMDB maps it and dies with `SIGBUS` on the first page past the end), a
    /// meta page that is not one (LMDB says "not an LMDB file" although the other is intact), or a
    /// meta page whose transaction id disagrees with its tree (LMDB would silently open an older
    /// state). Runs before LMDB opens the file.
    ///
    /// Another process may commit while the pages are read, so damage is believed only when a second
    /// reading, with the same current transaction, shows it again.
    package static func refuseDamagedDataFile(in directory: URL) throws(CofferError) {
        var seen: UInt64?
        for _ in 0..<5 {
            guard let check = DataFileCheck(path: directory.appendingPathComponent("data.mdb").path) else { return }
            defer { check.close() }
            guard !check.damage.isEmpty else { return }
            let current = check.current?.transactionID
            if let seen, current == seen { throw CofferError(.decode, damageMessage(check, directory: directory)) }
            seen = current
            usleep(20_000)
        }
        throw CofferError(
            .decode,
            "the vault's data file \(directory.path)/data.mdb changes too fast to be checked; try again"
        )
    }

    /// What is wrong with a data file and what to do, for people.
    package static func damageMessage(_ check: DataFileCheck, directory: URL) -> String {
        let what = check.damage.map(\.description).joined(separator: "; ")
        let repairable = check.damage.count == 1 && check.damage[0].repair != .none
        return "the vault's data file \(directory.path)/data.mdb is damaged: \(what). "
            + (repairable
                ? "The rest of the file shows what the page should say: `coffer repair` rewrites it (stop every other coffer process first), or restore the vault from a copy"
                : "Restore the vault from a complete copy; nothing was changed")
    }

    /// The data file's own structure, as ``Blobs/verify(readingData:)`` reports it: both meta pages,
    /// the file's length, and every B-tree and the free list of the current snapshot (each page used
    /// once, within bounds; libmdbx's `mdbx_chk` is the model).
    package func checkDataFile() throws(CofferError) -> [VerificationProblem] {
        guard let check = DataFileCheck(path: directory.appendingPathComponent("data.mdb").path) else {
            return [VerificationProblem(blob: nil, message: "data.mdb cannot be read to check its structure")]
        }
        defer { check.close() }
        let damage = try storage("checking the data file") {
            try environment.read { txn in check.damage + check.walk(snapshotID: txn.snapshotID) }
        }
        return damage.map { VerificationProblem(blob: nil, message: "data.mdb, \($0)") }
    }

    /// Repairs a damaged meta page of the vault in `directory` (what `coffer repair` does),
    /// which must not be open in any process.
    ///
    /// - Returns: What was done.
    /// - Throws: ``CofferError`` `.decode` when the damage is of another kind (restore from a copy),
    ///   `.param` when there is nothing to repair.
    public static func repairDataFile(at directory: URL) throws(CofferError) -> String {
        try refuseIrregularFiles(in: directory)
        guard let check = DataFileCheck(path: directory.appendingPathComponent("data.mdb").path) else {
            throw CofferError(
                .notAVault,
                "\(directory.path) is not a Coffer vault (it has no data.mdb with a meta page LMDB wrote)"
            )
        }
        defer { check.close() }
        guard !check.damage.isEmpty else {
            throw CofferError(.param, "\(directory.path)/data.mdb's meta pages and length are sound; nothing to repair")
        }
        guard !DataFileCheck.isOpenElsewhere(directory: directory.path) else {
            throw CofferError(
                .param,
                "another process has the vault at \(directory.path) open; stop it (every coffer command and app using the vault), then repair"
            )
        }
        guard let done = check.repairMetaPage() else {
            throw CofferError(.decode, damageMessage(check, directory: directory) + "; it cannot be repaired in place")
        }
        return done
    }
}
