/// A bundle's *records object* in an object store (docs/FORMAT.md, "Records objects"): beside
/// `NAME.bundle`, `NAME.records` is a bundle of its own, signed by the same device and bound to that
/// bundle, that holds the bundle's records and requests but, in place of each chunk record, where it
/// lies in the bundle (a site frame). A thin import reads it instead of the bundle, and so joins
/// without downloading the content.
///
/// Its sites are the signer's word, not checked as a whole bundle's chunks are on import (a member
/// can seal anything under any id, red team round 41): they are noted as *unchecked*
/// (``StoreContent``), which a read checks as every read does, but which no write deduplicates
/// against and no offload counts as held by the store. A write-only client's chunks, which only the
/// record of their write can check, come whole, as in the bundle.
package enum RecordsObject {
    /// The suffix of a records object's key.
    package static let suffix = ".records"

    /// The key of the records object beside the bundle `bundleKey`, or `nil` for a key that is no
    /// bundle's.
    package static func key(forBundle bundleKey: String) -> String? {
        guard bundleKey.hasSuffix(".bundle") else { return nil }
        return String(bundleKey.dropLast(".bundle".count)) + suffix
    }

    /// The key of the bundle a records object `key` describes, or `nil` for a key that is no records
    /// object's.
    package static func bundleKey(forRecords key: String) -> String? {
        guard key.hasSuffix(suffix) else { return nil }
        return String(key.dropLast(suffix.count)) + ".bundle"
    }

    /// Whether a records object of `size` bytes is worth storing beside a bundle of `bundleSize`: it
    /// spares a thin import at least seven eighths of the download. One that spares less (a bundle
    /// of records more than content) would only add to what the store holds.
    package static func isWorthStoring(size: Int64, beside bundleSize: Int64) -> Bool {
        size * 8 <= bundleSize
    }
}

/// What binds a records object to its bundle: the bundle's header salt (drawn afresh for every
/// export, so another copy's bundle of the same name has another), the SHA-256 of its whole clear
/// header, and its size. A thin import reads the bundle's header, checks all three, and otherwise
/// imports the bundle itself.
package struct RecordsBinding: Equatable, Sendable {
    /// The bundle header's salt.
    package let bundleSalt: [UInt8]
    /// The SHA-256 of the bundle's clear header, as stored.
    package let headerDigest: [UInt8]
    /// The bundle's size in bytes.
    package let bundleSize: UInt64

    package init(bundleSalt: [UInt8], headerDigest: [UInt8], bundleSize: UInt64) {
        self.bundleSalt = bundleSalt
        self.headerDigest = headerDigest
        self.bundleSize = bundleSize
    }

    /// The binding of the bundle whose header is `headerBytes` (with salt `salt`) and size `size`.
    package init(salt: [UInt8], headerBytes: [UInt8], size: UInt64) throws(CofferError) {
        let digest: [UInt8]
        do { digest = try SHA256.hash(headerBytes) } catch {
            throw CofferError(.internalError, "hashing a bundle header failed: \(error)", underlying: error)
        }
        self.init(bundleSalt: salt, headerDigest: digest, bundleSize: size)
    }
}
