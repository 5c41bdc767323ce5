/// Builds the big-endian binary records Coffer stores (see docs/FORMAT.md).
package struct BinaryWriter {
    package private(set) var bytes: [UInt8] = []

    package init() {}

    package mutating func write(_ value: UInt8) { bytes.append(value) }

    package mutating func write(_ value: UInt16) { append(value) }

    package mutating func write(_ value: UInt32) { append(value) }

    package mutating func write(_ value: UInt64) { append(value) }

    package mutating func write(_ value: Int64) { append(UInt64(bitPattern: value)) }

    /// Raw bytes, no length: for fields whose size the format fixes.
    package mutating func write(raw: some Sequence<UInt8>) { bytes.append(contentsOf: raw) }

    /// A 16-bit length, then the bytes.
    package mutating func write(lengthPrefixed field: [UInt8]) {
        precondition(field.count <= Int(UInt16.max), "field too long for a 16-bit length")
        write(UInt16(field.count))
        bytes.append(contentsOf: field)
    }

    private mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}
