internal import Glibc

/// What a restore worker did with one file.
package struct RestoreOutcome {
    /// Restored (it was missing), updated (replaced) or unchanged (its content was right already).
    package let action: RestoreChange.Action
    /// What could not be put back (an owner, an attribute).
    package let problems: [SnapshotProblem]
}

extension Snapshots {
    /// Writes one file of a snapshot, or checks the file in its place first: content (checked chunk
    /// by chunk, and against its SHA-256 in a version 1 snapshot; with holes where a sparse file had
    /// them), owner when running as root, mode, extended attributes (after the owner, which clears
    /// capabilities), times. The content goes to a temporary name in the file's directory, renamed
    /// over the final name when complete; on any failure (a full disk, Ctrl-C) the temporary file is
    /// removed, or named in `tally` if it cannot be (and each file moved into place is counted there). A file whose content is right already only
    /// has its metadata set. With `dryRun`, only the check. Runs on a restore worker thread.
    ///
    /// - Throws: ``CofferError`` naming the file.
    package static func restoreFile(
        _ job: RestoreJob,
        scope: SyncScope,
        level: ProtectionLevel,
        write: WriteKeys?,
        reader: ContentReader,
        context: ContentReadContext,
        isRoot: Bool,
        dryRun: Bool,
        tally: Locked<RestoreWorkerTally>
    ) throws(CofferError) -> RestoreOutcome {
        let entry = job.entry
        // Checked before any file is created: a damaged tree leaves nothing half made.
        let content = try FileContent(entry, scope: scope, level: level, write: write)
        var action = RestoreChange.Action.restored
        switch job.check {
        case .create:
            break
        case .replace:
            action = .updated
        case .verify(let trustingSizeAndTime, let existing):
            let descriptor = open(job.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            if descriptor >= 0 {
                defer { close(descriptor) }
                let isRight =
                    trustingSizeAndTime && existing.hasSizeAndTime(of: entry)
                    ? true : try reader.matches(content, descriptor: descriptor, context: context)
                if isRight {
                    let problems = dryRun ? [] : applyMetadata(entry, to: descriptor, isRoot: isRoot)
                    return RestoreOutcome(action: .unchanged, problems: problems)
                }
            }
            action = .updated
        }
        if dryRun { return RestoreOutcome(action: action, problems: []) }
        let temporary = RestoreTarget.temporaryName(beside: job.path)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure("creating a file to restore", entry.displayPath) }
        var isClosed = false
        var isInPlace = false
        defer {
            if !isClosed { close(descriptor) }
            if !isInPlace, unlink(temporary) != 0 {
                let name = String(decoding: temporary.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
                tally.withLock { $0.leftovers.append(name) }
            }
        }
        var problems: [SnapshotProblem] = []
        do throws(CofferError) {
            func stream(to sink: inout some ByteSink) throws(CofferError) {
                try reader.streamFile(
                    entry,
                    scope: scope,
                    level: level,
                    write: write,
                    to: &sink,
                    context: context,
                    parallelAbove: Self.filesParallelAbove
                )
            }
            if entry.isSparse {
                var sink = SparseFileSink(descriptor: descriptor)
                try stream(to: &sink)
                try sink.finish()
            } else {
                var sink = FileDescriptorSink(descriptor: descriptor)
                try stream(to: &sink)
            }
            problems = applyMetadata(entry, to: descriptor, isRoot: isRoot)
            isClosed = true
            if case .failure(let error) = nothingOrErrno({ close(descriptor) }) {
                throw error.cofferError("writing the file failed")
            }
            if case .failure(let error) = nothingOrErrno({ rename(temporary, job.path) }) {
                throw error.cofferError("moving it into place failed")
            }
            isInPlace = true
            tally.withLock { $0.filesInPlace += 1 }
        } catch  where error.code == .userCanceled || error.code == .decode {
            throw error
        } catch {
            throw CofferError(
                error.code,
                "restoring '\(entry.displayPath)' failed: \(error.message)",
                underlying: error
            )
        }
        return RestoreOutcome(action: action, problems: problems)
    }

    /// Sets a restored file's owner (as root), mode, extended attributes and times, in that order
    /// (a change of owner clears file capabilities, an attribute).
    static func applyMetadata(_ entry: TreeEntry, to descriptor: Int32, isRoot: Bool) -> [SnapshotProblem] {
        var problems: [SnapshotProblem] = []
        if isRoot, fchown(descriptor, entry.uid, entry.gid) != 0 {
            problems.append(SnapshotProblem(path: entry.displayPath, message: "owner not restored"))
        }
        fchmod(descriptor, mode_t(entry.mode & 0o7777))
        problems += ExtendedAttribute.apply(entry.attributes, to: descriptor).map {
            SnapshotProblem(path: entry.displayPath, message: $0)
        }
        var times = [timespec(entry), timespec(entry)]
        futimens(descriptor, &times)
        return problems
    }

    /// Files of more chunks than this are opened by threads of their own; smaller ones on their
    /// restore worker, as the workers already write several files at once.
    static let filesParallelAbove = 16
}
