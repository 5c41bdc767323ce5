internal import Glibc

/// Coffer's own note of the last state it committed (`commit-record`, beside `data.mdb`): a copy of
/// the meta page LMDB wrote for a transaction, so that an older meta page is never taken for the
/// current one (LMDB 0.9's meta pages carry no checksum, and one flipped bit in the newest page's
/// transaction id makes LMDB open the state before it).
///
/// The file holds two slots of ``slotSize`` bytes; each write goes to the slot not holding the newest
/// record, so a torn write (checksum wrong) leaves the other slot intact. Each slot is
/// `"CCR1"` ‖ version 1 (UInt8) ‖ 3 zero bytes ‖ the meta page's bytes 16 to 152 as LMDB wrote
/// them (little-endian: magic to transaction id) ‖ the first 16 bytes of the SHA-256 of the preceding
/// 144 (docs/FORMAT.md, "The commit record").
///
/// It is written after a commit returns, never before, so it may lag (a process killed between its
/// commit and the record, a commit whose meta page is not yet flushed, a Coffer from before the
/// record) but never claims a state LMDB has not committed: a healthy vault is never refused.
package struct CommitRecord: Sendable, Equatable {
    /// The file's name in the environment's directory.
    package static let fileName = "commit-record"
    /// One slot's size in bytes.
    package static let slotSize = 160
    /// Where the copied part of the meta page starts, and how long it is.
    package static let metaRange = 16..<152
    private static let magic = Array("CCR1".utf8)

    /// The meta page's bytes 16 to 152, as LMDB wrote them.
    package let meta: [UInt8]
    /// Which slot of the file it was read from.
    package let slot: Int

    /// The committed transaction's id.
    package var transactionID: UInt64 { DataFileCheck.integer(meta, 128, as: UInt64.self) }
    /// The main tree's root page.
    package var mainRoot: UInt64 { DataFileCheck.integer(meta, 112, as: UInt64.self) }
    /// The free list's root page.
    package var freeRoot: UInt64 { DataFileCheck.integer(meta, 64, as: UInt64.self) }
    /// The last page in use.
    package var lastPage: UInt64 { DataFileCheck.integer(meta, 120, as: UInt64.self) }
    /// The page size, from the free tree's descriptor.
    package var pageSize: Int { Int(DataFileCheck.integer(meta, 24, as: UInt32.self)) }

    /// The path of the record beside the data file at `dataFile`.
    package static func path(besideDataFile dataFile: String) -> String {
        var directory = dataFile
        if let slash = directory.lastIndex(of: "/") {
            directory.removeSubrange(directory.index(after: slash)...)
        } else {
            directory = ""
        }
        return directory + fileName
    }

    /// Every slot of the record at `path` that reads back whole (its checksum holds); empty when
    /// there is no record (a vault last written before records existed) or it cannot be read.
    package static func read(at path: String) -> [CommitRecord] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return [] }
        return slots(DataFileCheck.read(descriptor, at: 0, count: 2 * slotSize))
    }

    /// The newest record at `path`: the slot with the largest transaction id.
    package static func latest(at path: String) -> CommitRecord? {
        read(at: path).max { $0.transactionID < $1.transactionID }
    }

    private static func slots(_ bytes: [UInt8]) -> [CommitRecord] {
        (0..<2).compactMap { slot in
            let start = slot * slotSize
            guard bytes.count >= start + slotSize else { return nil }
            let body = Array(bytes[start..<(start + slotSize - 16)])
            guard body.starts(with: magic), body[4] == 1,
                let digest = try? SHA256.hash(body),
                digest[0..<16].elementsEqual(bytes[(start + slotSize - 16)..<(start + slotSize)])
            else { return nil }
            return CommitRecord(meta: Array(body[8...]), slot: slot)
        }
    }

    /// One slot holding `meta`, with its checksum.
    private static func encode(_ meta: [UInt8]) -> [UInt8]? {
        let body = magic + [1, 0, 0, 0] + meta
        guard let digest = try? SHA256.hash(body) else { return nil }
        return body + digest[0..<16]
    }

    /// Writes `meta` (a meta page's bytes 16 to 152) to the record at `path`, into the slot that
    /// does not hold the newest record, creating the file (mode 0600) if needed. Not flushed: a
    /// record lost in a crash only lags. Fails silently (a full disk, a read-only directory): the
    /// record then lags too.
    ///
    /// - Returns: Whether it was written.
    @discardableResult
    package static func write(meta: [UInt8], at path: String) -> Bool {
        guard meta.count == metaRange.count else { return false }
        let opened = valueOrErrno { open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600) }
        guard case .success(let descriptor) = opened else { return false }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return false }
        let existing = slots(DataFileCheck.read(descriptor, at: 0, count: 2 * slotSize))
        let newest = existing.max { $0.transactionID < $1.transactionID }
        let slot = newest.map { 1 - $0.slot } ?? 0
        guard let bytes = encode(meta) else { return false }
        let written = bytes.withUnsafeBytes { raw in
            valueOrErrno { pwrite(descriptor, raw.baseAddress, raw.count, off_t(slot * slotSize)) }
        }
        if case .success(let count) = written, count == slotSize { return true }
        return false
    }

    /// Replaces the record at `path` with meta page `metaIndex` of `dataFile` alone (both slots
    /// rewritten, then flushed): for a repair that accepted going back to an older state, after
    /// which the record must not name the lost transaction any more.
    ///
    /// - Returns: Whether it was written.
    @discardableResult
    package static func reset(fromDataFile dataFile: String, metaIndex: Int, pageSize: Int, at path: String?) -> Bool {
        guard let path else { return true }
        let source = open(dataFile, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard source >= 0 else { return false }
        let meta = DataFileCheck.read(
            source,
            at: UInt64(metaIndex * pageSize + metaRange.lowerBound),
            count: metaRange.count
        )
        close(source)
        guard meta.count == metaRange.count, let slot = encode(meta) else { return false }
        let bytes = slot + slot
        let opened = valueOrErrno { open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600) }
        guard case .success(let descriptor) = opened else { return false }
        defer { close(descriptor) }
        let written = bytes.withUnsafeBytes { raw in valueOrErrno { pwrite(descriptor, raw.baseAddress, raw.count, 0) }
        }
        guard case .success(let count) = written, count == bytes.count else { return false }
        return fsync(descriptor) == 0
    }

    /// Copies into the record beside `dataFile` the meta page that transaction `transactionID`
    /// wrote (page `transactionID mod 2`), if that page still holds it: what a write does after its
    /// commit returns, and compaction and repair after they rewrite a meta page.
    ///
    /// - Returns: Whether the record was written.
    @discardableResult
    package static func note(transactionID: UInt64, dataFile: String, pageSize: Int) -> Bool {
        let descriptor = open(dataFile, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let page = DataFileCheck.read(
            descriptor,
            at: UInt64(Int(transactionID & 1) * pageSize) + UInt64(metaRange.lowerBound),
            count: metaRange.count
        )
        // Another process's later commits may have reused the page: then it writes its own record.
        guard page.count == metaRange.count, DataFileCheck.integer(page, 128, as: UInt64.self) == transactionID,
            DataFileCheck.integer(page, 0, as: UInt32.self) == DataFileCheck.magic
        else { return false }
        return write(meta: page, at: path(besideDataFile: dataFile))
    }
}
