/// Item ids and the blind index (docs/FORMAT.md, "Item ids and the blind index").
///
/// An item's id is `HMAC(index key of its scope, 0x01 ‖ class ‖ scope ‖ canonical primary key)`: the
/// primary key decides the id, so uniqueness is a key collision and an exact lookup one `get`, and a
/// syncable item has the same id on every vault of its sync group.
///
/// The `itemIndex` table holds, for each indexed attribute an item has, the key
/// `HMAC(index key, 0x02 ‖ tag ‖ value)[0..<16] ‖ item id` with an empty value: equality queries on
/// class, service, account, server, label and access group scan one prefix, and the attribute values
/// are never stored in the clear.
package struct ItemIndex {
    /// Attributes with index entries, in the order a query prefers them (most selective first).
    package static let indexedAttributes: [ItemAttributes.Name] = [.account, .service, .server, .label, .accessGroup]
    /// The tag of the class's index entry (attribute tags start at 1).
    package static let classTag: UInt8 = 0
    package static let prefixSize = 16

    private let mac: HMACSHA256
    package let scope: SyncScope

    package init(key: SecureBytes, scope: SyncScope) throws(KeychainError) {
        do {
            mac = try HMACSHA256(key: key)
        } catch {
            throw KeychainError(.internalError, "keying the item index failed: \(error)", underlying: error)
        }
        self.scope = scope
    }

    /// The id of an item with this class and attributes in this index's scope, in access group `group`
    /// (the empty group: none). Unset key attributes count as empty.
    package func id(of itemClass: ItemClass, attributes: ItemAttributes, group: String) throws(KeychainError) -> [UInt8]
    {
        var canonical: [UInt8] = [0x01, itemClass.code, scope.code]
        canonical.reserveCapacity(128)
        canonical.append(ItemAttributes.Name.accessGroup.code)
        ItemAttributes.Value.text(group).appendLengthPrefixed(to: &canonical)
        for name in itemClass.primaryKeyAttributes {
            canonical.append(name.code)
            if let value = attributes[name] {
                value.appendLengthPrefixed(to: &canonical)
            } else {
                canonical.append(contentsOf: [0, 0, 0, 0])
            }
        }
        return try authenticate(canonical)
    }

    /// The id of the generic password for `service` and `account` in `group`: the same bytes as
    /// ``id(of:attributes:group:)`` builds, without building attributes (the hot path of
    /// `password(service:account:)`).
    package func genericPasswordID(service: String, account: String, group: String) throws(KeychainError) -> [UInt8] {
        do {
            return try withGenericPasswordID(service: service, account: account, group: group) { Array($0) }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw Self.macFailure(error)
        }
    }

    /// Calls `body` with the id ``genericPasswordID(service:account:group:)`` returns, built in
    /// temporary buffers (no allocation on the path of a password read). `body` must not keep it.
    package func withGenericPasswordID<R>(
        service: String,
        account: String,
        group: String,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        // class marker, class, scope, then code (1) ‖ length (UInt32) ‖ UTF-8 for each attribute.
        let size = 3 + 3 * 5 + group.utf8.count + service.utf8.count + account.utf8.count
        return try withUnsafeTemporaryAllocation(byteCount: size + HMACSHA256.byteCount, alignment: 1) { buffer in
            let canonical = UnsafeMutableRawBufferPointer(rebasing: buffer[..<size])
            let id = UnsafeMutableRawBufferPointer(rebasing: buffer[size...])
            canonical[0] = 0x01
            canonical[1] = ItemClass.genericPassword.code
            canonical[2] = scope.code
            var offset = 3
            func append(_ name: ItemAttributes.Name, _ text: String) {
                let length = text.utf8.count
                canonical[offset] = name.code
                canonical.storeBytes(of: UInt32(length).bigEndian, toByteOffset: offset + 1, as: UInt32.self)
                UnsafeMutableRawBufferPointer(rebasing: canonical[(offset + 5)...]).copyBytes(from: text.utf8)
                offset += 5 + length
            }
            append(.accessGroup, group)
            append(.service, service)
            append(.account, account)
            do {
                try mac.authenticationCode(of: UnsafeRawBufferPointer(canonical), into: id)
            } catch {
                throw Self.macFailure(error)
            }
            return try body(UnsafeRawBufferPointer(id))
        }
    }

    /// The id of `item`, whose access group is resolved already.
    package func id(of item: KeychainItem) throws(KeychainError) -> [UInt8] {
        try id(of: item.itemClass, attributes: item.attributes, group: item.attributes.accessGroup ?? "")
    }

    /// The prefix of the index entries for `value` of attribute `tag`.
    package func prefix(tag: UInt8, value: [UInt8]) throws(KeychainError) -> [UInt8] {
        try entry(tag: tag, value: value, id: [])
    }

    /// Every index entry key of an item.
    package func entries(for item: KeychainItem, id: [UInt8]) throws(KeychainError) -> [[UInt8]] {
        var entries: [[UInt8]] = []
        entries.reserveCapacity(1 + Self.indexedAttributes.count)
        entries.append(try entry(tag: Self.classTag, value: [item.itemClass.code], id: id))
        for name in Self.indexedAttributes {
            if let value = item.attributes[name] {
                entries.append(try entry(tag: name.code, value: value.encoded, id: id))
            }
        }
        return entries
    }

    /// The index entry key `prefix ‖ id` for `value` of attribute `tag`, the message and its code
    /// built in a temporary buffer: one allocation, the key's own (a batched add builds five or six
    /// per item).
    private func entry(tag: UInt8, value: [UInt8], id: [UInt8]) throws(KeychainError) -> [UInt8] {
        let messageSize = 2 + value.count
        do {
            return try withUnsafeTemporaryAllocation(
                byteCount: messageSize + HMACSHA256.byteCount,
                alignment: 1
            ) { buffer in
                buffer[0] = 0x02
                buffer[1] = tag
                UnsafeMutableRawBufferPointer(rebasing: buffer[2..<messageSize]).copyBytes(from: value)
                let code = UnsafeMutableRawBufferPointer(rebasing: buffer[messageSize...])
                try mac.authenticationCode(of: UnsafeRawBufferPointer(rebasing: buffer[..<messageSize]), into: code)
                return [UInt8](unsafeUninitializedCapacity: Self.prefixSize + id.count) { key, count in
                    let raw = UnsafeMutableRawBufferPointer(key)
                    raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: code[..<Self.prefixSize]))
                    UnsafeMutableRawBufferPointer(rebasing: raw[Self.prefixSize...]).copyBytes(from: id)
                    count = Self.prefixSize + id.count
                }
            }
        } catch {
            throw Self.macFailure(error)
        }
    }

    private func authenticate(_ message: [UInt8]) throws(KeychainError) -> [UInt8] {
        do {
            return try mac.authenticationCode(of: message)
        } catch {
            throw Self.macFailure(error)
        }
    }

    private static func macFailure(_ error: any Error) -> KeychainError {
        KeychainError(.internalError, "computing an item id failed: \(error)", underlying: error)
    }
}
