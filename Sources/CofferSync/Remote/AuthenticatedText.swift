/// The small text objects Coffer keeps in an object store beside the bundles (heads, cuts): lines,
/// then `mac <hex>`, the HMAC-SHA256 of the lines above (newlines included) under
/// HKDF(group key of the epoch they name, a label of their own), so only a device holding that key
/// can write one (docs/FORMAT.md, "Remote layout").
package enum AuthenticatedText {
    /// `body` with its mac line, under `root`.
    package static func seal(_ body: [UInt8], label: String, root: SecureBytes) throws(CofferError) -> [UInt8] {
        body + Array("mac \(try mac(body, label: label, root: root).hexEncoded)\n".utf8)
    }

    /// The body of a sealed text, once its mac verifies under `root`.
    ///
    /// - Throws: ``CofferError`` `.decode` naming `what` when it has no mac line or does not verify.
    package static func open(
        _ bytes: [UInt8],
        label: String,
        root: SecureBytes,
        what: String
    ) throws(CofferError) -> [UInt8] {
        guard let macLine = bytes.dropLast().lastIndex(of: UInt8(ascii: "\n")).map({ $0 + 1 }),
            bytes.last == UInt8(ascii: "\n")
        else { throw CofferError(.decode, "\(what) is not a Coffer object") }
        let body = Array(bytes[..<macLine])
        let stated = String(decoding: bytes[macLine...].dropLast(), as: UTF8.self)
        guard stated.hasPrefix("mac ") else { throw CofferError(.decode, "\(what) is not a Coffer object") }
        let expected = Array(try mac(body, label: label, root: root).hexEncoded.utf8)
        let matches = Array(stated.dropFirst(4).utf8).withUnsafeBytes { stated in
            expected.withUnsafeBytes { ConstantTime.equals(stated, $0) }
        }
        guard matches else {
            throw CofferError(
                .decode,
                "\(what) does not verify under this vault's sync group key: it belongs to another sync group or was "
                    + "altered; give each sync group its own prefix"
            )
        }
        return body
    }

    /// The fields of a body: `name value` per line after the first, by name (a repeated name keeps
    /// every value, in order).
    package static func fields(of body: [UInt8]) -> (first: Substring?, fields: [String: [String]]) {
        let lines = String(decoding: body, as: UTF8.self).split(separator: "\n")
        var fields: [String: [String]] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0]), default: []].append(String(parts[1])) }
        }
        return (lines.first, fields)
    }

    private static func mac(_ body: [UInt8], label: String, root: SecureBytes) throws(CofferError) -> [UInt8] {
        do {
            let key = try HKDF.deriveKey(from: root, label: label)
            return try HMACSHA256.authenticationCode(for: body, key: key)
        } catch {
            throw CofferError(.internalError, "authenticating an object failed: \(error)", underlying: error)
        }
    }
}
