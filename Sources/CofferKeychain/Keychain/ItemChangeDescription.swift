/// What the journal keeps of a changed keychain item (``LocalJournal/Description``): its label,
/// service or server as the name, and its class and attributes (never its value) as the detail:
///
/// ```
/// detail: class (1) ‖ count (UInt16) ‖ count × ( attribute code (1) ‖ length (UInt32) ‖ stored bytes )
/// ```
package enum ItemChangeDescription {
    /// The description of `item`.
    package static func describe(_ item: KeychainItem) -> LocalJournal.Description {
        var detail: [UInt8] = [item.itemClass.code]
        let attributes = item.attributes.setAttributes
        withUnsafeBytes(of: UInt16(attributes.count).bigEndian) { detail.append(contentsOf: $0) }
        for (name, value) in attributes {
            detail.append(name.code)
            value.appendLengthPrefixed(to: &detail)
        }
        let name =
            item.attributes.label ?? item.attributes.service ?? item.attributes.server ?? item.attributes.account ?? ""
        return LocalJournal.Description(name: name, detail: detail)
    }

    /// The class and attributes in a description's detail.
    ///
    /// - Throws: ``KeychainError`` `.decode` for a malformed detail.
    package static func read(_ detail: [UInt8]) throws(KeychainError) -> (ItemClass, ItemAttributes) {
        var reader = BinaryReader(detail, what: "a journal entry's item")
        let classCode = try reader.readUInt8()
        guard let itemClass = ItemClass(code: classCode) else {
            throw KeychainError(.decode, "a journal entry names an unknown item class \(classCode)")
        }
        var attributes = ItemAttributes()
        for _ in 0..<(try reader.readUInt16()) {
            let code = try reader.readUInt8()
            let length = Int(try reader.readUInt32())
            // An attribute a newer Coffer added is skipped, not fatal: the rest still describes the item.
            guard let name = ItemAttributes.Name(code: code) else {
                try reader.skip(length)
                continue
            }
            attributes[name] = try reader.withBytes(length) { bytes throws(KeychainError) in
                try ItemAttributes.Value(decoding: bytes, as: name.kind)
            }.get()
        }
        try reader.finish()
        return (itemClass, attributes)
    }
}
