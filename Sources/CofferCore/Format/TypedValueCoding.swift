package import Foundation

/// How typed values are stored (`Keychain.set(_:for:accessibility:scope:)`,
/// `Blobs.write(_:encoding:options:)`): JSON as Foundation's `JSONEncoder` writes it, with sorted
/// keys and no extra whitespace, dates as seconds since 2001-01-01 (a number, Foundation's default,
/// which round-trips exactly) and data as base64, so any JSON reader can read them and the same
/// value always gives the same bytes.
package enum TypedValueCoding {
    /// `value` as the bytes stored.
    ///
    /// - Throws: ``CofferError`` `.param` if the value cannot be encoded (a non-finite number, say).
    package static func encode(_ value: some Encodable, what: String) throws(CofferError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(value)
        } catch {
            throw CofferError(.param, "\(what) could not be encoded as JSON: \(error)")
        }
    }

    /// The value `data` holds, as a `T`.
    ///
    /// - Throws: ``CofferError`` `.decode` naming what holds it and the type asked for.
    package static func decode<T: Decodable>(_ type: T.Type, from data: Data, what: String) throws(CofferError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw CofferError(.decode, "\(what) does not hold a \(T.self) in JSON: \(error)")
        }
    }
}
