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
        guard let check = try settledDataFileCheck(in: directory) else { return }
        defer { check.close() }
        guard check.damage.isEmpty else { throw CofferError(.decode, damageMessage(check, directory: directory)) }
    }

    /// The check of the data file in `directory` (``dataFileCheck(in:)``), its damage believed only
    /// when a second reading, with the same current transaction, shows it again: another process may
    /// commit while the pages are read. Close it when done.
    ///
    /// - Returns: `nil` when the file holds no meta page LMDB wrote (opening says so).
    /// - Throws: ``CofferError`` `.decode` when the file changes too fast to be checked.
    package static func settledDataFileCheck(in directory: URL) throws(CofferError) -> DataFileCheck? {
        var seen: UInt64?
        for _ in 0..<5 {
            guard let check = dataFileCheck(in: directory) else { return nil }
            let current = check.current?.transactionID
            if check.damage.isEmpty || (seen != nil && current == seen) { return check }
            check.close()
            seen = current
            usleep(20_000)
        }
        throw CofferError(
            .decode,
            "the vault's data file \(directory.path)/data.mdb changes too fast to be checked; try again"
        )
    }

    /// The check of the vault's data file in `directory`, compared with its commit record.
    package static func dataFileCheck(in directory: URL) -> DataFileCheck? {
        let dataFile = directory.appendingPathComponent("data.mdb").path
        return DataFileCheck(path: dataFile, recordPath: CommitRecord.path(besideDataFile: dataFile))
    }

    /// What is wrong with a data file and what to do, for people.
    package static func damageMessage(_ check: DataFileCheck, directory: URL) -> String {
        let what = check.damage.map(\.description).joined(separator: "; ")
        let advice: String
        switch check.damage.count == 1 ? check.damage[0].repair : .none {
        case .none:
            advice = "Restore the vault from a complete copy; nothing was changed"
        case .rollback(let lost, let current):
            advice =
                "\(InterfaceName.repair) says what it can recover: only going back to transaction \(current), which loses transaction \(lost) (\(InterfaceName.repairAcceptingLoss)); or restore the vault from a copy. Nothing was changed"
        case .fromRecord:
            advice =
                "\(InterfaceName.repair) restores the committed state from \(CommitRecord.fileName) (stop every other process using the vault first); nothing was changed"
        default:
            advice =
                "The rest of the file shows what the page should say: \(InterfaceName.repair) rewrites it (stop every other process using the vault first), or restore the vault from a copy"
        }
        return "the vault's data file \(directory.path)/data.mdb is damaged: \(what). \(advice)"
    }

    /// The data file's own structure, as ``Blobs/verify(readingData:)`` reports it: both meta pages,
    /// the file's length, the commit record, and every B-tree and the free list of the snapshot `txn`
    /// reads (each page used once, within bounds; libmdbx's `mdbx_chk` is the model). Read with
    /// `pread`, never through LMDB, so a damaged page is reported, not walked. Damage is noted
    /// (``Environment/noteDamage(_:)``: writes refuse), and a sound file lifts an earlier note.
    package func checkDataFile(in txn: Transaction) throws(CofferError) -> [VerificationProblem] {
        guard let damage = try dataFileDamage(in: txn) else {
            return [VerificationProblem(blob: nil, message: "data.mdb cannot be read to check its structure")]
        }
        let problems = damage.map { VerificationProblem(blob: nil, message: "data.mdb, \($0)") }
        if let first = problems.first {
            let more = problems.count == 1 ? "" : "; and \(problems.count - 1) more"
            environment.noteDamage(first.message + more)
        } else if environment.knownDamage != nil {
            environment.clearKnownDamage()
        }
        return problems
    }

    /// What is wrong with the data file's meta pages, length and trees, seen from the snapshot `txn`
    /// reads; `nil` when the file cannot be opened to check it (its directory was removed while the
    /// vault is open, say), which is not damage. A sound walk of the committed state leaves the note
    /// that spares the next write a walk (``CheckedTrees``), if the file did not change meanwhile.
    private func dataFileDamage(in txn: Transaction) throws(CofferError) -> [DataFileCheck.Damage]? {
        guard let check = try Self.settledDataFileCheck(in: directory) else { return nil }
        defer { check.close() }
        let before = CheckedTrees(directory: directory.path, transactionID: txn.snapshotID)
        let damage = check.damage + check.walk(snapshotID: txn.snapshotID)
        if damage.isEmpty, check.current?.transactionID == txn.snapshotID { environment.noteTreesSound(before) }
        return damage
    }

    /// Walks every tree of the data file with Coffer's checked reader before a command that reads
    /// every page through LMDB (`export`, `compact`): a damaged page is named here instead of
    /// stopping the process inside LMDB, and noted (``Environment/noteDamage(_:)``) so that writes
    /// refuse until the file is sound again. A file that cannot be opened to check is left to LMDB.
    ///
    /// - Parameter action: What was about to be done, for the message ("compacting").
    /// - Throws: ``CofferError`` `.decode` naming the damage; nothing was changed.
    package func refuseDamagedTrees(before action: String) throws(CofferError) {
        let damage = try storage("checking the data file") {
            try environment.read { txn in try dataFileDamage(in: txn) }
        }
        guard let damage, !damage.isEmpty else { return }
        let what = damage.map(\.description).joined(separator: "; ")
        environment.noteDamage("data.mdb, " + what)
        throw CofferError(
            .decode,
            "the vault's data file \(directory.path)/data.mdb is damaged: \(what). \(action.prefix(1).uppercased() + action.dropFirst()) reads every page, so it stops here; nothing was changed, and writes are refused until the file is sound. Restore the vault from a complete copy"
        )
    }

    /// Repairs a damaged meta page of the vault in `directory` (what `coffer repair` does),
    /// which must not be open in any process. A repair that would lose a committed transaction
    /// (only an older state can be recovered) is refused, saying what would be lost, unless
    /// `acceptingLoss`.
    ///
    /// - Parameters:
    ///   - directory: The vault's directory.
    ///   - acceptingLoss: Whether going back to an older state, losing the newest transaction, is
    ///     allowed (`coffer repair --accept-loss`).
    /// - Returns: What was done, and what was lost if anything.
    /// - Throws: ``CofferError`` `.decode` when the damage is of another kind (restore from a copy)
    ///   or repairing would lose a committed transaction, `.param` when there is nothing to repair.
    public static func repairDataFile(at directory: URL, acceptingLoss: Bool = false) throws(CofferError) -> String {
        try refuseIrregularFiles(in: directory)
        guard let check = dataFileCheck(in: directory) else {
            throw CofferError(
                .notAVault,
                "\(directory.path) is not a Coffer vault (it has no data.mdb with a meta page LMDB wrote)"
            )
        }
        defer { check.close() }
        guard !check.damage.isEmpty else {
            let hasRecord = check.recordPath.map { !CommitRecord.read(at: $0).isEmpty } ?? false
            var agreement = hasRecord ? " and agree with \(CommitRecord.fileName)" : ""
            // The meta pages are sound; the trees may not be (repair rewrites only meta pages).
            if !DataFileCheck.isOpenElsewhere(directory: directory.path), let current = check.current {
                let trees = check.walk(snapshotID: current.transactionID)
                agreement += ", and its trees are sound"
                if !trees.isEmpty {
                    throw CofferError(
                        .decode,
                        "the vault's data file \(directory.path)/data.mdb is damaged: \(trees.map(\.description).joined(separator: "; ")). Its meta pages are sound, and repair rewrites only meta pages: restore the vault from a complete copy; nothing was changed"
                    )
                }
            }
            throw CofferError(
                .param,
                "\(directory.path)/data.mdb's meta pages and length are sound\(agreement); nothing to repair"
            )
        }
        guard !DataFileCheck.isOpenElsewhere(directory: directory.path) else {
            throw CofferError(
                .param,
                "another process has the vault at \(directory.path) open; stop it (every command and app using the vault), then repair"
            )
        }
        switch check.repairMetaPage(acceptingLoss: acceptingLoss) {
        case .repaired(let done):
            return done
        case .wouldLose(let loss):
            throw CofferError(
                .decode,
                "repair cannot recover everything: \(loss). Nothing was changed; \(run: .repairAcceptingLoss) to accept the loss, or restore the vault from a copy"
            )
        case .impossible:
            let what = check.damage.map(\.description).joined(separator: "; ")
            throw CofferError(
                .decode,
                "the vault's data file \(directory.path)/data.mdb is damaged: \(what); it cannot be repaired in place. Restore the vault from a complete copy; nothing was changed"
            )
        }
    }
}
