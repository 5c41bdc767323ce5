/// The small text objects Coffer keeps in an object store beside the bundles (heads, cuts): lines,
/// then `mac <hex>`, the HMAC-SHA256 of the lines above (newlines included) under
/// HKDF(group key of the epoch they name, a label of their own), so only a device holding that key
/// can write one; and, from head version 3 and cut version 2 on, `signature <hex>`: the Ed25519
/// signature of the writing device over `label/signature ‖ 0x00 ‖ every line above it`, so only that device can
/// (docs/FORMAT.md, "Remote layout").
package enum AuthenticatedText {
    /// `body` with its mac line, under `root`, and a signature line by `signer` when there is one.
    package static func seal(
        _ body: [UInt8],
        label: String,
        root: SecureBytes,
        signer: Ed25519PrivateKey? = nil
    ) throws(CofferError) -> [UInt8] {
        let sealed = body + Array("mac \(try mac(body, label: label, root: root).hexEncoded)\n".utf8)
        guard let signer else { return sealed }
        let signature: [UInt8]
        do {
            signature = try signer.signature(of: signedMessage(sealed, label: label))
        } catch {
            throw CofferError(.internalError, "signing an object failed: \(error)", underlying: error)
        }
        return sealed + Array("signature \(signature.hexEncoded)\n".utf8)
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
        let (body, stated) = try lastLine(of: bytes, named: "mac", what: what)
        let expected = Array(try mac(body, label: label, root: root).hexEncoded.utf8)
        let matches = Array(stated.utf8).withUnsafeBytes { stated in
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

    /// The sealed text of a signed one (its lines up to the mac line, included), once its signature
    /// verifies with `signingKey`, the Ed25519 public key of the device it names.
    ///
    /// - Throws: ``CofferError`` `.notTrusted` naming `what` when it has no signature line or the
    ///   signature does not verify.
    package static func verifySignature(
        _ bytes: [UInt8],
        label: String,
        signingKey: [UInt8],
        what: String
    ) throws(CofferError) -> [UInt8] {
        guard let (sealed, stated) = try? lastLine(of: bytes, named: "signature", what: what),
            let signature = [UInt8](hexDigits: stated)
        else { throw CofferError(.notTrusted, "\(what) is not signed") }
        let valid: Bool
        do {
            valid = try Ed25519PrivateKey.isValidSignature(
                signature,
                of: signedMessage(sealed, label: label),
                by: signingKey
            )
        } catch {
            throw CofferError(.internalError, "checking the signature of \(what) failed: \(error)", underlying: error)
        }
        guard valid else {
            throw CofferError(
                .notTrusted,
                "\(what) is not signed by the device it names: it was altered or forged by another device"
            )
        }
        return sealed
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

    /// The text before its last line, and that line's value, which must be `name value`.
    private static func lastLine(
        of bytes: [UInt8],
        named name: String,
        what: String
    ) throws(CofferError) -> (before: [UInt8], value: String) {
        guard let start = bytes.dropLast().lastIndex(of: UInt8(ascii: "\n")).map({ $0 + 1 }),
            bytes.last == UInt8(ascii: "\n")
        else { throw CofferError(.decode, "\(what) is not a Coffer object") }
        let line = String(decoding: bytes[start...].dropLast(), as: UTF8.self)
        guard line.hasPrefix("\(name) ") else { throw CofferError(.decode, "\(what) is not a Coffer object") }
        return (Array(bytes[..<start]), String(line.dropFirst(name.count + 1)))
    }

    private static func signedMessage(_ sealed: [UInt8], label: String) -> [UInt8] {
        Array("\(label)/signature".utf8) + [0] + sealed
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
