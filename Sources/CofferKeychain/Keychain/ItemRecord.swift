import Foundation

/// The stored form of a keychain item in the `items` table (docs/FORMAT.md, "Item records"):
///
/// ```
/// header (5): version = 1 ‖ class ‖ scope ‖ accessibility ‖ flags (bit 0: user presence)
///             [‖ key epoch (UInt64), when the scope byte's bit 7 is set (``SealedScope``)]
/// sealed:     AES-256-GCM(item key of scope, epoch and protection level, body,
///                         aad = "coffer/v1/item" ‖ 0x00 ‖ item id (32) ‖ header)
/// body:       created ms (Int64) ‖ modified ms (Int64) ‖ attribute count (UInt16) ‖
///             [tag (1) ‖ length (UInt32) ‖ bytes]… ‖ value length (UInt32) ‖ value
/// ```
///
/// The header stays readable so the right key can be chosen (and other classes skipped) without
/// decrypting; the associated data binds it, and the id, to the sealed body, so a record moved to
/// another id, or with an altered header, fails to open.
package struct ItemRecord {
    package static let version: UInt8 = 1
    /// The fixed part of the header; an epoch id may follow it.
    package static let headerSize = 5

    /// The clear header of a stored record.
    package struct Header: Equatable {
        package let itemClass: ItemClass
        package let scope: SyncScope
        package let accessibility: Accessibility
        package let requiresUserPresence: Bool
        /// The key epoch the record is sealed in.
        package let epoch: KeyEpoch

        private var sealedScope: SealedScope { SealedScope(scope, epoch: epoch) }

        package var bytes: [UInt8] {
            [ItemRecord.version, itemClass.code, sealedScope.code, accessibility.code, requiresUserPresence ? 1 : 0]
                + sealedScope.trailer
        }

        /// The header's size in a stored record: the fixed part and the epoch, if any.
        package var size: Int { ItemRecord.headerSize + (epoch.isOriginal ? 0 : SealedScope.epochSize) }

        /// Reads the header of a stored record.
        package init(stored: UnsafeRawBufferPointer) throws(KeychainError) {
            guard stored.count >= ItemRecord.headerSize + AESGCM.overhead else {
                throw KeychainError(
                    .decode,
                    "a keychain record is too short (\(stored.count) bytes); the vault is damaged"
                )
            }
            guard stored[0] == ItemRecord.version else {
                throw KeychainError(.unsupportedFormat, "a keychain record has version \(stored[0]); upgrade Coffer")
            }
            guard let itemClass = ItemClass(code: stored[1]),
                let sealed = SealedScope.read(code: stored[2], in: stored, fixedSize: ItemRecord.headerSize),
                let accessibility = Accessibility(code: stored[3]), stored[4] <= 1,
                stored.count >= ItemRecord.headerSize + SealedScope.trailerSize(code: stored[2]) + AESGCM.overhead
            else {
                throw KeychainError(.decode, "a keychain record's header is invalid; the record was altered or damaged")
            }
            self.init(
                itemClass: itemClass,
                scope: sealed.scope,
                accessibility: accessibility,
                requiresUserPresence: stored[4] == 1,
                epoch: sealed.epoch
            )
        }

        package init(
            itemClass: ItemClass,
            scope: SyncScope,
            accessibility: Accessibility,
            requiresUserPresence: Bool,
            epoch: KeyEpoch
        ) {
            self.itemClass = itemClass
            self.scope = scope
            self.accessibility = accessibility
            self.requiresUserPresence = requiresUserPresence
            self.epoch = epoch
        }

        /// The header `item` is sealed with in `epoch`.
        package init(_ item: KeychainItem, epoch: KeyEpoch) {
            self.init(
                itemClass: item.itemClass,
                scope: item.scope,
                accessibility: item.accessibility,
                requiresUserPresence: item.requiresUserPresence,
                epoch: epoch
            )
        }
    }

    package static let associatedDataLabel = Array("coffer/v1/item".utf8) + [0]

    package static func associatedData(id: [UInt8], header: Header) -> [UInt8] {
        let headerBytes = header.bytes
        let size = associatedDataSize(idCount: id.count, headerSize: headerBytes.count)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            id.withUnsafeBytes { id in
                headerBytes.withUnsafeBytes { header in
                    writeAssociatedData(id: id, header: header, into: UnsafeMutableRawBufferPointer(buffer))
                }
            }
            count = size
        }
    }

    /// The size of the associated data for an id of `idCount` bytes and a header of `headerSize`.
    package static func associatedDataSize(idCount: Int, headerSize: Int) -> Int {
        associatedDataLabel.count + idCount + headerSize
    }

    /// Writes the associated data, label ‖ id ‖ header, into `buffer` (exactly
    /// ``associatedDataSize(idCount:headerSize:)`` bytes): the one place its layout is spelled out.
    package static func writeAssociatedData(
        id: UnsafeRawBufferPointer,
        header: UnsafeRawBufferPointer,
        into buffer: UnsafeMutableRawBufferPointer
    ) {
        associatedDataLabel.withUnsafeBytes { buffer.copyMemory(from: $0) }
        UnsafeMutableRawBufferPointer(rebasing: buffer[associatedDataLabel.count...]).copyMemory(from: id)
        UnsafeMutableRawBufferPointer(rebasing: buffer[(associatedDataLabel.count + id.count)...])
            .copyMemory(from: header)
    }

    /// Seals `item` (attributes, dates and value) for storage under `id`, in `epoch` (whose item key
    /// `key` is).
    package static func seal(
        _ item: KeychainItem,
        id: [UInt8],
        key: SecureBytes,
        epoch: KeyEpoch,
        cipher: AESGCM
    ) throws(KeychainError) -> [UInt8] {
        let header = Header(item, epoch: epoch)
        var body = BinaryWriter()
        body.write(Int64(((item.creationDate ?? Date()).timeIntervalSince1970 * 1000).rounded()))
        body.write(Int64(((item.modificationDate ?? Date()).timeIntervalSince1970 * 1000).rounded()))
        let attributes = item.attributes.setAttributes
        body.write(UInt16(attributes.count))
        for (name, value) in attributes {
            let encoded = value.encoded
            body.write(name.code)
            body.write(UInt32(encoded.count))
            body.write(raw: encoded)
        }
        let value = item.value ?? Data()
        body.write(UInt32(value.count))
        body.write(raw: value)
        var plaintext = body.bytes
        defer { plaintext.wipe() }
        do {
            return header.bytes
                + (try cipher.seal(plaintext, key: key, authenticating: associatedData(id: id, header: header)))
        } catch {
            throw KeychainError(.internalError, "sealing a keychain record failed: \(error)", underlying: error)
        }
    }

    /// Opens a stored record and calls `body` with its value in place, skipping the attributes (for
    /// direct reads whose key already proves which item it is). Associated data and plaintext live in
    /// temporary buffers, and the plaintext is wiped before they are released. `body` must not keep
    /// the buffer.
    package static func withValue<R>(
        of stored: UnsafeRawBufferPointer,
        header: Header,
        id: UnsafeRawBufferPointer,
        key: SecureBytes,
        cipher: AESGCM,
        _ body: (UnsafeRawBufferPointer) -> R
    ) throws(KeychainError) -> R {
        let headerSize = header.size
        let sealed = UnsafeRawBufferPointer(rebasing: stored[headerSize...])
        let aadSize = associatedDataSize(idCount: id.count, headerSize: headerSize)
        let plaintextSize = sealed.count - AESGCM.overhead
        // The caller read the header (`Header(stored:)`), which checks the record is long enough.
        precondition(plaintextSize >= 0, "a keychain record shorter than its overhead reached withValue")
        let outcome = withUnsafeTemporaryAllocation(byteCount: aadSize + plaintextSize, alignment: 1) { buffer in
            Result { () throws(KeychainError) -> R in
                let aad = UnsafeMutableRawBufferPointer(rebasing: buffer[..<aadSize])
                let plaintext = UnsafeMutableRawBufferPointer(rebasing: buffer[aadSize...])
                writeAssociatedData(
                    id: id,
                    header: UnsafeRawBufferPointer(rebasing: stored[..<headerSize]),
                    into: aad
                )
                do throws(CryptoError) {
                    try cipher.open(sealed, key: key, authenticating: UnsafeRawBufferPointer(aad), into: plaintext)
                } catch {
                    throw authenticationFailure(error)
                }
                defer { plaintext.wipe() }
                let value = try valueRange(in: UnsafeRawBufferPointer(plaintext))
                return body(UnsafeRawBufferPointer(rebasing: plaintext[value]))
            }
        }
        return try outcome.get()
    }

    /// Where the value lies in a decrypted record body: past the dates and every attribute.
    private static func valueRange(in body: UnsafeRawBufferPointer) throws(KeychainError) -> Range<Int> {
        var reader = BinaryReader(body, what: "a keychain record")
        try reader.skip(16)
        for _ in 0..<(try reader.readUInt16()) {
            try reader.skip(1)
            try reader.skip(Int(try reader.readUInt32()))
        }
        let count = Int(try reader.readUInt32())
        let start = reader.offset
        try reader.skip(count)
        try reader.finish()
        return start..<(start + count)
    }

    private static func authenticationFailure(_ error: CryptoError) -> KeychainError {
        KeychainError(
            .decode,
            "a keychain record failed authentication: it was altered, damaged, or moved from another item",
            underlying: error
        )
    }

    private static func decrypt(
        _ stored: UnsafeRawBufferPointer,
        id: [UInt8],
        header: Header,
        key: SecureBytes,
        cipher: AESGCM
    ) throws(KeychainError) -> [UInt8] {
        do {
            return try cipher.open(
                UnsafeRawBufferPointer(rebasing: stored[header.size...]),
                key: key,
                authenticating: associatedData(id: id, header: header)
            )
        } catch {
            throw authenticationFailure(error)
        }
    }

    /// A stored record sealed again in `epoch` with `key` (the item key of that epoch), after
    /// opening it with `oldKey` (its own epoch's): the same item, byte for byte inside, in another key
    /// generation. The plaintext is wiped.
    ///
    /// - Throws: ``KeychainError`` `.decode` if it does not authenticate.
    package static func reseal(
        _ stored: UnsafeRawBufferPointer,
        id: [UInt8],
        header: Header,
        opening oldKey: SecureBytes,
        sealing key: SecureBytes,
        in epoch: KeyEpoch,
        cipher: AESGCM
    ) throws(KeychainError) -> [UInt8] {
        var plaintext = try decrypt(stored, id: id, header: header, key: oldKey, cipher: cipher)
        defer { plaintext.wipe() }
        let resealed = Header(
            itemClass: header.itemClass,
            scope: header.scope,
            accessibility: header.accessibility,
            requiresUserPresence: header.requiresUserPresence,
            epoch: epoch
        )
        do {
            return resealed.bytes
                + (try cipher.seal(plaintext, key: key, authenticating: associatedData(id: id, header: resealed)))
        } catch {
            throw KeychainError(.internalError, "sealing a keychain record failed: \(error)", underlying: error)
        }
    }

    /// Opens a stored record.
    ///
    /// - Throws: ``KeychainError`` `.decode` if it does not authenticate or parse.
    package static func open(
        _ stored: UnsafeRawBufferPointer,
        id: [UInt8],
        header: Header,
        key: SecureBytes,
        cipher: AESGCM
    ) throws(KeychainError) -> KeychainItem {
        var plaintext = try decrypt(stored, id: id, header: header, key: key, cipher: cipher)
        defer { plaintext.wipe() }
        return try parse(plaintext, header: header)
    }

    /// Reads a decrypted record: dates, attributes, value.
    ///
    /// - Throws: ``KeychainError`` `.decode` for a malformed record.
    package static func parse(_ plaintext: [UInt8], header: Header) throws(KeychainError) -> KeychainItem {
        var reader = BinaryReader(plaintext, what: "a keychain record")
        let created = try reader.readInt64()
        let modified = try reader.readInt64()
        var attributes = ItemAttributes()
        for _ in 0..<(try reader.readUInt16()) {
            let code = try reader.readUInt8()
            guard let name = ItemAttributes.Name(code: code) else {
                throw KeychainError(.decode, "a keychain record has an unknown attribute \(code); upgrade Coffer")
            }
            attributes[name] = try reader.withBytes(Int(try reader.readUInt32())) { bytes throws(KeychainError) in
                try ItemAttributes.Value(decoding: bytes, as: name.kind)
            }.get()
        }
        let value = Data(try reader.readBytes(Int(try reader.readUInt32())))
        try reader.finish()
        var item = KeychainItem(
            header.itemClass,
            attributes: attributes,
            value: value,
            accessibility: header.accessibility,
            scope: header.scope,
            requiresUserPresence: header.requiresUserPresence
        )
        item.creationDate = Date(timeIntervalSince1970: Double(created) / 1000)
        item.modificationDate = Date(timeIntervalSince1970: Double(modified) / 1000)
        return item
    }
}
