/// Where this vault's chunks lie in object stores, and what it keeps of them locally: the
/// `storeContent` table (docs/FORMAT.md, "Chunks in the object store").
///
/// Every bundle this vault pushes or pulls holds chunk records at known places in its plaintext
/// stream; each is noted as the chunk's *site* (object, offset, length), so the vault can later drop
/// its local copy (``Offload``) and read it back from the store on demand. One table, these kinds of
/// key:
///
/// ```
/// 0x01 ‖ chunk id        → site:   object number (UInt64) ‖ record offset (UInt64) ‖ record length (UInt32)
/// 0x02 ‖ object number   → object: remote ‖ key (UInt16 length ‖ UTF-8 each) ‖ size (UInt64)
///                                  ‖ header length (UInt32) ‖ segment size (UInt32)
/// 0x03 ‖ remote ‖ 0x00 ‖ key → object number (UInt64)
/// 0x04 ‖ chunk id        → cached: last use (UInt64) ‖ record length (UInt32)
/// 0x05                   → the last object number given (UInt64): numbers are never reused
/// 0x06 ‖ kind ‖ record id → structure: SHA-256 of the stored record (32) ‖ chunk ids (32 each)
/// 0x07 ‖ chunk id ‖ object number → other site: record offset (UInt64) ‖ record length (UInt32)
/// 0x08 ‖ object number ‖ chunk id → (empty): the other sites in an object, to forget with it
/// 0x09 ‖ object number   → (empty): every chunk record in the object has its site noted
/// 0x0A ‖ chunk id        → SHA-256 of the record of a write-only client's chunk, dropped locally
/// 0x0B ‖ chunk id        → (empty): no site of the chunk was checked (all came from records objects)
/// 0x0C ‖ remote ‖ 0x00 ‖ key → size (UInt64): a read found that object damaged past its header
/// ```
///
/// A chunk's site under `0x01` is the first noted while its object is known; every other object it
/// was noted in keeps a site under `0x07`, so a read falls back to another copy when one object is
/// gone or damaged (a device that pushed the same content again, a checkpoint). A chunk is
/// *offloaded* when it has references (`chunkRefs`), no local record (`chunks`) and a site in an
/// object still known.
/// A *cached* chunk has a local record and a cache entry: it may be dropped again to keep the cache
/// within its budget. A record's *structure* chunks (list chunks, a snapshot's tree) are never offloaded:
/// releasing the record reads them. The table appears with the first site; vaults without it hold none.
package struct StoreContent {
    /// The table's name.
    package static let tableName = "storeContent"

    package let schema: Schema
    package let table: Table

    /// The vault's store-content table, or `nil` while it has none (no site noted yet).
    package init?(schema: Schema) {
        guard let table = schema.storeContent else { return nil }
        self.schema = schema
        self.table = table
    }

    private enum Kind: UInt8 {
        case site = 1
        case object = 2
        case objectName = 3
        case cached = 4
        case lastNumber = 5
        case structure = 6
        case otherSite = 7
        case objectSite = 8
        case wholeObject = 9
        case perWriteDigest = 10
        case unchecked = 11
        case foundDamaged = 12
    }

    // MARK: Objects

    /// The number of `object`, noting it if needed. An object of that name written again (another
    /// size or shape) is another object: the old one is forgotten, so no site in it is read at the
    /// offsets of the new one.
    package func number(of object: StoreObject, in txn: Transaction) throws -> UInt64 {
        let nameKey = Self.nameKey(remote: object.remote, key: object.key)
        if let stored = try txn.get(table, key: nameKey) {
            var reader = BinaryReader(stored, what: "a store object's number")
            let number = try reader.readUInt64()
            if try self.object(number, in: txn) == object { return number }
            try forget(number, in: txn)
        }
        // Numbers are never given twice: a site in a forgotten object must not name a new one.
        let counterKey = [Kind.lastNumber.rawValue]
        let last = try txn.get(table, key: counterKey).map { (stored) throws -> UInt64 in
            var reader = BinaryReader(stored, what: "the last store object number")
            return try reader.readUInt64()
        }
        let number = (last ?? 0) + 1
        var counter = BinaryWriter()
        counter.write(number)
        try txn.put(table, key: counterKey, value: counter.bytes)
        try txn.put(table, key: Self.objectKey(number), value: object.encoded)
        var writer = BinaryWriter()
        writer.write(number)
        try txn.put(table, key: nameKey, value: writer.bytes)
        return number
    }

    /// The object numbered `number`, or `nil` once it is forgotten (gone from its store).
    package func object(_ number: UInt64, in txn: Transaction) throws -> StoreObject? {
        try txn.withValue(table, key: Self.objectKey(number)) { try StoreObject(decoding: Array($0)) }
    }

    /// Every object noted in `remote`, by number.
    package func objects(in remote: String, txn: Transaction) throws -> [UInt64: StoreObject] {
        var objects: [UInt64: StoreObject] = [:]
        try txn.forEach(in: table, prefix: [Kind.object.rawValue]) { key, value in
            let object = try StoreObject(decoding: Array(value))
            guard object.remote == remote else { return true }
            var reader = BinaryReader(Array(key.dropFirst()), what: "a store object's number")
            objects[try reader.readUInt64()] = object
            return true
        }
        return objects
    }

    /// Forgets object `number` (it is gone from its store): the sites in it no longer count, and the
    /// other sites noted in it go.
    package func forget(_ number: UInt64, in txn: Transaction) throws {
        guard let object = try object(number, in: txn) else { return }
        try txn.delete(table, key: Self.objectKey(number))
        try txn.delete(table, key: Self.nameKey(remote: object.remote, key: object.key))
        try txn.delete(table, key: Self.wholeObjectKey(number))
        let prefix = Self.objectSitePrefix(number)
        var chunks: [ChunkID] = []
        try txn.forEach(in: table, prefix: prefix) { key, _ in
            chunks.append(try ChunkID(stored: key.dropFirst(prefix.count)))
            return true
        }
        for id in chunks {
            try txn.delete(table, key: Self.otherSiteKey(id, object: number))
            try txn.delete(table, key: prefix + id.bytes)
        }
    }

    /// Forgets `object` if it is the one noted under its name (the same size and shape), as a read
    /// found it damaged (``OffloadedChunkSource/noteDamaged(_:)``).
    /// With `rememberingDamage` (its header held, its stream did not), the damage is remembered
    /// (``foundDamaged(in:in:)``): this vault cannot tell what the rest holds, so its compactions
    /// keep it. An object overwritten from its header on holds nothing of the original.
    package func forgetIfNoted(_ object: StoreObject, rememberingDamage: Bool = false, in txn: Transaction) throws {
        if rememberingDamage {
            var size = BinaryWriter()
            size.write(object.size)
            try txn.put(table, key: Self.foundDamagedKey(remote: object.remote, key: object.key), value: size.bytes)
        }
        guard let stored = try txn.get(table, key: Self.nameKey(remote: object.remote, key: object.key)) else { return }
        var reader = BinaryReader(stored, what: "a store object's number")
        let number = try reader.readUInt64()
        if try self.object(number, in: txn) == object { try forget(number, in: txn) }
    }

    /// The objects of `remote` a read found damaged (``forgetIfNoted(_:in:)``), by key, with the size
    /// they had then.
    package func foundDamaged(in remote: String, in txn: Transaction) throws -> [String: UInt64] {
        let prefix = Self.foundDamagedKey(remote: remote, key: "")
        var found: [String: UInt64] = [:]
        try txn.forEach(in: table, prefix: prefix) { key, value in
            var reader = BinaryReader(Array(value), what: "a damaged object's size")
            found[String(decoding: key.dropFirst(prefix.count), as: UTF8.self)] = try reader.readUInt64()
            return true
        }
        return found
    }

    /// Forgets that a read found object `key` of `remote` damaged (it is gone, or another now).
    package func forgetFoundDamaged(_ key: String, in remote: String, in txn: Transaction) throws {
        try txn.delete(table, key: Self.foundDamagedKey(remote: remote, key: key))
    }

    /// Notes that every chunk record in object `number` has its site noted (it was read whole, or
    /// written by this vault): looking for a chunk elsewhere need not read it again.
    package func noteWhole(_ number: UInt64, in txn: Transaction) throws {
        try txn.put(table, key: Self.wholeObjectKey(number), value: [])
    }

    /// Whether every chunk record in object `number` has its site noted (``noteWhole(_:in:)``).
    package func isWhole(_ number: UInt64, in txn: Transaction) throws -> Bool {
        try txn.contains(table, key: Self.wholeObjectKey(number))
    }

    // MARK: Sites

    /// Notes that chunk `id`'s record lies in object `number` at `site`. The site noted first stays
    /// the first a read tries while its object is known, and the new one is kept as another: a later
    /// object, even one a member signed, may carry a record that is not the chunk's (red team round
    /// 41: junk under another device's chunk ids), and one read first would hide the genuine copy.
    /// Only a site in the store the chunk is offloaded to (`remote`, the one the vault reads from)
    /// comes ahead of one in another store.
    ///
    /// A site a records object gave (`checked` false, ``isUnchecked(_:in:)``) marks the chunk
    /// unchecked when it had no site in an object still known; a checked one lifts the mark.
    package func note(
        _ id: ChunkID,
        at site: ChunkSite,
        offloadedTo remote: String?,
        checked: Bool = true,
        in txn: Transaction
    ) throws {
        if checked {
            try noteChecked(id, in: txn)
        } else if try self.site(of: id, in: txn) == nil {
            try txn.put(table, key: Self.uncheckedKey(id), value: [])
        }
        let current = try primarySite(of: id, in: txn)
        if let current, current.object == site.object {
            try txn.put(table, key: Self.siteKey(id), value: site.encoded)
            return
        }
        if let current, let currentObject = try object(current.object, in: txn) {
            let newObject = try object(site.object, in: txn)
            let intoOffloadStore = remote != nil && currentObject.remote != remote && newObject?.remote == remote
            guard intoOffloadStore else {
                try noteOther(id, at: site, in: txn)
                return
            }
            try noteOther(id, at: current, in: txn)
        }
        try forgetOther(id, object: site.object, in: txn)
        try txn.put(table, key: Self.siteKey(id), value: site.encoded)
    }

    /// Chunk `id`'s site and the object holding it, or `nil` when it has none in an object still
    /// known: the first noted, else another (``sites(of:in:)``).
    package func site(of id: ChunkID, in txn: Transaction) throws -> (site: ChunkSite, object: StoreObject)? {
        try sites(of: id, in: txn).first
    }

    /// Every site of chunk `id` in an object still known, the first noted first: where a read
    /// looks, one after another, when an object is gone or damaged.
    package func sites(of id: ChunkID, in txn: Transaction) throws -> [(site: ChunkSite, object: StoreObject)] {
        var sites: [(site: ChunkSite, object: StoreObject)] = []
        let primary = try primarySite(of: id, in: txn)
        if let primary, let object = try object(primary.object, in: txn) { sites.append((primary, object)) }
        let prefix = [Kind.otherSite.rawValue] + id.bytes
        var others: [ChunkSite] = []
        try txn.forEach(in: table, prefix: prefix) { key, value in
            var keyReader = BinaryReader(Array(key.dropFirst(prefix.count)), what: "a chunk's other site")
            var valueReader = BinaryReader(Array(value), what: "a chunk's other site")
            let number = try keyReader.readUInt64()
            others.append(
                ChunkSite(object: number, offset: try valueReader.readUInt64(), length: try valueReader.readUInt32())
            )
            return true
        }
        for other in others where other.object != primary?.object {
            if let object = try object(other.object, in: txn) { sites.append((other, object)) }
        }
        return sites
    }

    /// Whether no site of chunk `id` was checked: each came from a records object, the word of the
    /// device that signed it, and no read has fetched the record from one (docs/FORMAT.md, "Records
    /// objects"). A write does not deduplicate against such a chunk, and offloading does not count
    /// it as held by the store.
    package func isUnchecked(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        try txn.contains(table, key: Self.uncheckedKey(id))
    }

    /// Notes that a site of chunk `id` was checked (a read fetched and checked its record there, or
    /// the site came from a bundle read or written whole).
    package func noteChecked(_ id: ChunkID, in txn: Transaction) throws {
        try txn.delete(table, key: Self.uncheckedKey(id))
    }

    /// Whether chunk `id` has a site noted, in an object still known or not.
    package func hasSite(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        try txn.contains(table, key: Self.siteKey(id))
    }

    /// The site noted last for chunk `id`, its object known or not.
    private func primarySite(of id: ChunkID, in txn: Transaction) throws -> ChunkSite? {
        try txn.withValue(table, key: Self.siteKey(id)) { try ChunkSite(decoding: Array($0)) }
    }

    private func noteOther(_ id: ChunkID, at site: ChunkSite, in txn: Transaction) throws {
        var writer = BinaryWriter()
        writer.write(site.offset)
        writer.write(site.length)
        try txn.put(table, key: Self.otherSiteKey(id, object: site.object), value: writer.bytes)
        try txn.put(table, key: Self.objectSitePrefix(site.object) + id.bytes, value: [])
    }

    private func forgetOther(_ id: ChunkID, object number: UInt64, in txn: Transaction) throws {
        try txn.delete(table, key: Self.otherSiteKey(id, object: number))
        try txn.delete(table, key: Self.objectSitePrefix(number) + id.bytes)
    }

    /// Visits every site noted: chunk id, site.
    package func forEachSite(in txn: Transaction, _ body: (ChunkID, ChunkSite) throws -> Bool) throws {
        try txn.forEach(in: table, prefix: [Kind.site.rawValue]) { key, value in
            try body(try ChunkID(stored: key.dropFirst()), try ChunkSite(decoding: Array(value)))
        }
    }

    /// Forgets chunk `id`'s sites (the chunk is gone).
    package func forgetSite(of id: ChunkID, in txn: Transaction) throws {
        try txn.delete(table, key: Self.siteKey(id))
        try txn.delete(table, key: Self.cachedKey(id))
        try txn.delete(table, key: Self.perWriteDigestKey(id))
        try txn.delete(table, key: Self.uncheckedKey(id))
        let prefix = [Kind.otherSite.rawValue] + id.bytes
        var numbers: [UInt64] = []
        try txn.forEach(in: table, prefix: prefix) { key, _ in
            var reader = BinaryReader(Array(key.dropFirst(prefix.count)), what: "a chunk's other site")
            numbers.append(try reader.readUInt64())
            return true
        }
        for number in numbers { try forgetOther(id, object: number, in: txn) }
    }

    /// Whether chunk `id` is offloaded: referenced, with no local record but a site.
    package func isOffloaded(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        guard try txn.contains(schema.chunkRefs, key: id), try !schema.records.contains(id, in: txn) else {
            return false
        }
        return try site(of: id, in: txn) != nil
    }

    // MARK: Records sealed per write

    /// Drops chunk `id`'s local record (offloaded, or out of the cache). The record of a write-only
    /// client's chunk is remembered by its SHA-256 first: its keys are agreed per write, so a record
    /// arriving under its id later can be told genuine only by comparing (``isGenuineCopy(_:of:in:)``).
    package func dropLocalRecord(_ id: ChunkID, in txn: Transaction) throws {
        let digest = try schema.records.withRecord(id, in: txn) { record in
            Self.isSealedPerWrite(record) ? try SHA256.hash(record) : nil
        }
        if let digest = digest ?? nil { try txn.put(table, key: Self.perWriteDigestKey(id), value: digest) }
        try schema.records.delete(id, in: txn)
    }

    /// Whether a record arriving under chunk `id` sealed with keys agreed per write (a write-only
    /// client's), which only the record of its write can check, is a copy of the one this vault holds
    /// or held: its SHA-256, `digest`, is that of the local record, or of the one it dropped (every
    /// copy of a chunk record is its sealing's bytes, copied). A site is noted only for such a copy:
    /// a member can seal junk under any id with such a header, and a site in its object would hide
    /// the genuine one (red team round 42, F1 and F2).
    package func isGenuineCopy(digest: [UInt8], of id: ChunkID, in txn: Transaction) throws -> Bool {
        if let local = try schema.records.withRecord(id, in: txn, { try SHA256.hash($0) }) { return local == digest }
        return try txn.get(table, key: Self.perWriteDigestKey(id)).map(Array.init) == digest
    }

    /// Whether chunk `id`, dropped locally, is sealed with keys agreed per write (its record's
    /// digest is kept: ``dropLocalRecord(_:in:)``).
    package func isSealedPerWrite(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        try txn.contains(table, key: Self.perWriteDigestKey(id))
    }

    /// Whether a chunk record's clear header says it is sealed with keys agreed per write
    /// (`completeUnlessOpen`: its level byte).
    package static func isSealedPerWrite(_ record: some Collection<UInt8>) -> Bool {
        record.count > 2
            && record[record.index(record.startIndex, offsetBy: 2)] == ProtectionLevel.completeUnlessOpen.code
    }

    // MARK: Cache

    /// Notes chunk `id` as cached: its local record may be dropped again, least recently used first.
    package func noteCached(_ id: ChunkID, length: Int, lastUse: UInt64, in txn: Transaction) throws {
        var writer = BinaryWriter()
        writer.write(lastUse)
        writer.write(UInt32(clamping: length))
        try txn.put(table, key: Self.cachedKey(id), value: writer.bytes)
    }

    /// Keeps chunk `id`'s `record` here for good (a record's structure, which offloading never
    /// drops): stored if it is not, and out of the cache, which may have taken it as it was fetched.
    /// Nothing for a chunk no longer referenced.
    package func keepForGood(_ id: ChunkID, record: [UInt8], in txn: Transaction) throws {
        guard try txn.contains(schema.chunkRefs, key: id) else { return }
        if try !schema.records.contains(id, in: txn) { try schema.records.put(id, record, in: txn) }
        try forgetCached(id, in: txn)
    }

    /// Whether chunk `id` is in the cache.
    package func isCached(_ id: ChunkID, in txn: Transaction) throws -> Bool {
        try txn.contains(table, key: Self.cachedKey(id))
    }

    /// Forgets chunk `id`'s cache entry (its record was dropped, or it is gone).
    package func forgetCached(_ id: ChunkID, in txn: Transaction) throws {
        try txn.delete(table, key: Self.cachedKey(id))
    }

    /// Visits every cache entry: chunk id, last use, record length.
    package func forEachCached(in txn: Transaction, _ body: (ChunkID, UInt64, Int) throws -> Bool) throws {
        try txn.forEach(in: table, prefix: [Kind.cached.rawValue]) { key, value in
            var reader = BinaryReader(Array(value), what: "a cache entry")
            let lastUse = try reader.readUInt64()
            let length = Int(try reader.readUInt32())
            return try body(try ChunkID(stored: key.dropFirst()), lastUse, length)
        }
    }

    // MARK: Structure

    /// The structure chunks noted for the record of `kind` under `id`, if they were noted for the
    /// version of it whose stored bytes hash to `digest`.
    package func structure(
        of kind: SyncRecordKind,
        id: [UInt8],
        digest: [UInt8],
        in txn: Transaction
    ) throws -> [ChunkID]? {
        try txn.withValue(table, key: Self.structureKey(kind, id: id)) { value -> [ChunkID]? in
            guard value.count >= 32, value.count % 32 == 0, Array(value.prefix(32)) == digest else { return nil }
            return try stride(from: 32, to: value.count, by: 32).map { offset throws(CofferError) in
                try ChunkID(stored: value[offset..<offset + 32])
            }
        } ?? nil
    }

    /// Notes the structure chunks of the version of a record whose stored bytes hash to `digest`.
    package func noteStructure(
        of kind: SyncRecordKind,
        id: [UInt8],
        digest: [UInt8],
        chunks: [ChunkID],
        in txn: Transaction
    ) throws {
        try txn.put(table, key: Self.structureKey(kind, id: id), value: digest + chunks.flatMap(\.bytes))
    }

    /// Visits every record whose structure is noted: its kind and id.
    package func forEachNotedStructure(
        in txn: Transaction,
        _ body: (SyncRecordKind, [UInt8]) throws -> Bool
    ) throws {
        try txn.forEach(in: table, prefix: [Kind.structure.rawValue]) { key, _ in
            guard key.count > 2, let kind = SyncRecordKind(rawValue: key[key.startIndex + 1]) else {
                throw CofferError(.decode, "a record structure entry of the store-content table is damaged")
            }
            return try body(kind, Array(key.dropFirst(2)))
        }
    }

    /// Forgets what was noted of the structure of the record of `kind` under `id` (it is gone).
    package func forgetStructure(of kind: SyncRecordKind, id: [UInt8], in txn: Transaction) throws {
        try txn.delete(table, key: Self.structureKey(kind, id: id))
    }

    // MARK: Keys

    private static func structureKey(_ kind: SyncRecordKind, id: [UInt8]) -> [UInt8] {
        [Kind.structure.rawValue, kind.rawValue] + id
    }

    private static func siteKey(_ id: ChunkID) -> [UInt8] { [Kind.site.rawValue] + id.bytes }
    private static func cachedKey(_ id: ChunkID) -> [UInt8] { [Kind.cached.rawValue] + id.bytes }
    private static func uncheckedKey(_ id: ChunkID) -> [UInt8] { [Kind.unchecked.rawValue] + id.bytes }
    private static func perWriteDigestKey(_ id: ChunkID) -> [UInt8] { [Kind.perWriteDigest.rawValue] + id.bytes }

    private static func otherSiteKey(_ id: ChunkID, object number: UInt64) -> [UInt8] {
        numbered(.otherSite, number, after: id.bytes)
    }

    private static func objectSitePrefix(_ number: UInt64) -> [UInt8] { numbered(.objectSite, number) }
    private static func wholeObjectKey(_ number: UInt64) -> [UInt8] { numbered(.wholeObject, number) }
    private static func objectKey(_ number: UInt64) -> [UInt8] { numbered(.object, number) }

    /// `kind` ‖ `prefix` ‖ an object number.
    private static func numbered(_ kind: Kind, _ number: UInt64, after prefix: [UInt8] = []) -> [UInt8] {
        var writer = BinaryWriter()
        writer.write(kind.rawValue)
        writer.write(raw: prefix)
        writer.write(number)
        return writer.bytes
    }

    private static func nameKey(remote: String, key: String) -> [UInt8] {
        [Kind.objectName.rawValue] + Array(remote.utf8) + [0] + Array(key.utf8)
    }

    private static func foundDamagedKey(remote: String, key: String) -> [UInt8] {
        [Kind.foundDamaged.rawValue] + Array(remote.utf8) + [0] + Array(key.utf8)
    }
}

/// A bundle object in an object store, as far as reading a chunk from it needs: where it is, how
/// large, and the shape of its stream (docs/FORMAT.md, "Bundles").
package struct StoreObject: Equatable, Sendable {
    /// The store's identity (endpoint, bucket and prefix).
    package var remote: String
    /// The object's key in the bucket.
    package var key: String
    /// The object's size in bytes.
    package var size: UInt64
    /// The length of the bundle's clear header, where its stream begins.
    package var headerLength: UInt32
    /// The stream's plaintext segment size.
    package var segmentSize: UInt32

    package init(remote: String, key: String, size: UInt64, headerLength: UInt32, segmentSize: UInt32) {
        self.remote = remote
        self.key = key
        self.size = size
        self.headerLength = headerLength
        self.segmentSize = segmentSize
    }

    package init(decoding bytes: [UInt8]) throws(CofferError) {
        var reader = BinaryReader(bytes, what: "a store object")
        remote = String(decoding: try reader.readLengthPrefixed(), as: UTF8.self)
        key = String(decoding: try reader.readLengthPrefixed(), as: UTF8.self)
        size = try reader.readUInt64()
        headerLength = try reader.readUInt32()
        segmentSize = try reader.readUInt32()
        try reader.finish()
    }

    package var encoded: [UInt8] {
        var writer = BinaryWriter()
        writer.write(lengthPrefixed: Array(remote.utf8))
        writer.write(lengthPrefixed: Array(key.utf8))
        writer.write(size)
        writer.write(headerLength)
        writer.write(segmentSize)
        return writer.bytes
    }
}

/// Where one chunk record lies in a bundle object: its plaintext offset in the stream and length.
/// The chunk id is the 32 bytes before `offset` (the chunk frame's body starts with it).
package struct ChunkSite: Equatable, Sendable {
    /// The object's number in ``StoreContent``.
    package var object: UInt64
    /// The record's first byte in the stream's plaintext.
    package var offset: UInt64
    /// The record's length.
    package var length: UInt32

    package init(object: UInt64, offset: UInt64, length: UInt32) {
        self.object = object
        self.offset = offset
        self.length = length
    }

    package init(decoding bytes: [UInt8]) throws(CofferError) {
        var reader = BinaryReader(bytes, what: "a chunk's site")
        object = try reader.readUInt64()
        offset = try reader.readUInt64()
        length = try reader.readUInt32()
        try reader.finish()
    }

    package var encoded: [UInt8] {
        var writer = BinaryWriter()
        writer.write(object)
        writer.write(offset)
        writer.write(length)
        return writer.bytes
    }
}
