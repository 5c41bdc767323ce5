package import Foundation

/// This vault's own record of its pushes to one object store, kept in `meta` under
/// `remote-pushed <remote identity>` (docs/FORMAT.md, "Remote layout"): the head its last push wrote,
/// and the head a push is about to write (set before the head's PUT, cleared after), so the next push
/// knows its own head from one another copy of this vault wrote, and a store rolled back from one that
/// moved on.
///
/// ```
/// value = version (1) = 3 ‖ device id (16) ‖ which (1: bit 0 pushed, bit 1 writing)
///         ‖ [sent through (UInt64) ‖ latest first (UInt64) ‖ latest last (UInt64) ‖ push id (16)
///            ‖ latest's salt (32) ‖ lineage count (UInt16) ‖ [push id (16) ‖ sent through (UInt64)]
///            per head of the lineage] per bit set
/// ```
///
/// Version 2 had no lineage (read as empty), version 1 no salt either (an older Coffer's record, still
/// read: its bundle is then not checked). A head kept from a version-1 record is stored with zeros for
/// its salt, which read back as not known.
package struct RemotePushRecord: Equatable {
    /// A head as the record keeps it.
    package struct Head: Equatable {
        /// The head's cursor: changes through it were pushed.
        package var sentThrough: UInt64
        /// The newest bundle the head names.
        package var latest: RemoteLayout.BundleName
        /// The push that wrote it (32 hex digits).
        package var push: String
        /// The salt of the bundle `latest` names as this vault wrote it (empty when not known): the
        /// object under that name is this vault's only while its header has it.
        package var salt: [UInt8]
        /// The heads it follows, newest first (``RemoteHead/lineage``).
        package var lineage: [RemoteHead.Ancestor]

        /// The parts of `head` the record keeps, with the salt of the bundle it names.
        package init(_ head: RemoteHead, salt: [UInt8]) {
            self.init(
                sentThrough: head.sentThrough,
                latest: head.latest,
                push: head.push,
                salt: salt,
                lineage: head.lineage
            )
        }

        /// A head from its parts.
        package init(
            sentThrough: UInt64,
            latest: RemoteLayout.BundleName,
            push: String,
            salt: [UInt8] = [],
            lineage: [RemoteHead.Ancestor] = []
        ) {
            self.sentThrough = sentThrough
            self.latest = latest
            self.push = push
            self.salt = salt
            self.lineage = lineage
        }

        /// Whether `head` is this one (the same push).
        package func matches(_ head: RemoteHead) -> Bool { !push.isEmpty && head.push == push }

        /// Whether `head`, of this push (``matches(_:)``), says what this push wrote: another head with
        /// its push id was signed by someone else holding the device's keys.
        package func wrote(_ head: RemoteHead) -> Bool {
            matches(head) && head.sentThrough == sentThrough && head.latest == latest && head.lineage == lineage
        }

        /// This head followed by its lineage, newest first: what a head written after it follows.
        package var withLineage: [RemoteHead.Ancestor] {
            (push.isEmpty ? [] : [RemoteHead.Ancestor(push: push, sentThrough: sentThrough)]) + lineage
        }
    }

    /// The heads of this vault's history in the store, newest first: the one it is writing, the one
    /// it wrote last, and those they follow.
    package var lineage: [RemoteHead.Ancestor] {
        (writing?.withLineage ?? []) + (pushed?.withLineage ?? [])
    }

    /// The device the record is of (a re-enrolled vault has a new id, and no record yet).
    package var device: UUID
    /// The head the last complete push wrote.
    package var pushed: Head?
    /// The head a push is writing now (or was, when it stopped).
    package var writing: Head?

    /// A record of `device`'s pushes.
    package init(device: UUID, pushed: Head? = nil, writing: Head? = nil) {
        self.device = device
        self.pushed = pushed
        self.writing = writing
    }

    /// The meta key of the record for `remote`.
    package static func metaKey(_ remote: String) -> [UInt8] { Array("remote-pushed \(remote)".utf8) }

    /// The record of `device`'s pushes to `remote`, if it has one.
    ///
    /// - Throws: ``CofferError`` `.decode` for a damaged entry.
    package static func load(
        device: UUID,
        remote: String,
        in txn: Transaction,
        schema: Schema
    ) throws -> RemotePushRecord? {
        guard let value = try txn.get(schema.meta, key: metaKey(remote)) else { return nil }
        let what = "the record of the pushes to \(remote)"
        var reader = BinaryReader(value, what: what)
        let version = try reader.readUInt8()
        guard (1...3).contains(version) else {
            throw CofferError(.decode, "meta \"\(what)\" has an unknown version; the vault is damaged")
        }
        let stored = try UUID(storedBytes: try reader.readBytes(16), what: what)
        let which = try reader.readUInt8()
        func head() throws -> Head {
            let sentThrough = try reader.readUInt64()
            let name = RemoteLayout.BundleName(first: try reader.readUInt64(), last: try reader.readUInt64())
            let push = try reader.readBytes(16).hexEncoded
            // Zeros stand for a salt not known (a head kept from a version-1 record).
            let salt = version >= 2 ? try reader.readBytes(BundleHeader.saltSize) : []
            var lineage: [RemoteHead.Ancestor] = []
            if version >= 3 {
                for _ in 0..<(try reader.readUInt16()) {
                    let push = try reader.readBytes(16).hexEncoded
                    lineage.append(RemoteHead.Ancestor(push: push, sentThrough: try reader.readUInt64()))
                }
            }
            return Head(
                sentThrough: sentThrough,
                latest: name,
                push: push,
                salt: salt.allSatisfy { $0 == 0 } ? [] : salt,
                lineage: lineage
            )
        }
        let pushed = which & 1 != 0 ? try head() : nil
        let writing = which & 2 != 0 ? try head() : nil
        guard stored == device else { return nil }
        return RemotePushRecord(device: stored, pushed: pushed, writing: writing)
    }

    /// Stores the record for `remote`.
    package func store(remote: String, in txn: Transaction, schema: Schema) throws {
        var writer = BinaryWriter()
        writer.write(UInt8(3))
        writer.write(raw: device.bytes)
        writer.write(UInt8((pushed == nil ? 0 : 1) | (writing == nil ? 0 : 2)))
        for head in [pushed, writing].compactMap({ $0 }) {
            writer.write(head.sentThrough)
            writer.write(head.latest.first)
            writer.write(head.latest.last)
            writer.write(raw: [UInt8](hexDigits: head.push) ?? [UInt8](repeating: 0, count: 16))
            writer.write(
                raw: head.salt.count == BundleHeader.saltSize
                    ? head.salt : [UInt8](repeating: 0, count: BundleHeader.saltSize)
            )
            let lineage = head.lineage.prefix(RemoteHead.lineageLimit)
            writer.write(UInt16(lineage.count))
            for ancestor in lineage {
                writer.write(raw: [UInt8](hexDigits: ancestor.push) ?? [UInt8](repeating: 0, count: 16))
                writer.write(ancestor.sentThrough)
            }
        }
        try txn.put(schema.meta, key: Self.metaKey(remote), value: writer.bytes)
    }
}
