/// Reads the big-endian binary records Coffer stores, failing with a decode error (never a crash) on
/// input that is short, long or malformed: stored bytes may have been altered.
///
/// Reads an array, or a buffer a caller owns (a record decrypted into temporary memory), which must
/// then outlive the reader. Either is indexed from 0.
package struct BinaryReader<Bytes: RandomAccessCollection<UInt8>> where Bytes.Index == Int {
    private let bytes: Bytes
    /// How many bytes have been read or skipped.
    package private(set) var offset = 0
    /// Names the record in error messages, e.g. `meta "kdf"`.
    private let what: String

    package init(_ bytes: Bytes, what: String) {
        precondition(bytes.startIndex == 0, "BinaryReader reads collections indexed from 0")
        self.bytes = bytes
        self.what = what
    }

    package mutating func readUInt8() throws(CofferError) -> UInt8 { try read(UInt8.self) }

    package mutating func readUInt16() throws(CofferError) -> UInt16 { try read(UInt16.self) }

    package mutating func readUInt32() throws(CofferError) -> UInt32 { try read(UInt32.self) }

    package mutating func readUInt64() throws(CofferError) -> UInt64 { try read(UInt64.self) }

    package mutating func readInt64() throws(CofferError) -> Int64 { Int64(bitPattern: try read(UInt64.self)) }

    /// Exactly `count` bytes.
    package mutating func readBytes(_ count: Int) throws(CofferError) -> [UInt8] {
        guard count >= 0, bytes.count - offset >= count else { throw truncated() }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// Moves past `count` bytes without copying them.
    package mutating func skip(_ count: Int) throws(CofferError) {
        guard count >= 0, bytes.count - offset >= count else { throw truncated() }
        offset += count
    }

    /// Calls `body` with the next `count` bytes, without copying them.
    package mutating func withBytes<R, E: Error>(
        _ count: Int,
        _ body: (Bytes.SubSequence) throws(E) -> R
    ) throws(CofferError) -> Result<R, E> {
        guard count >= 0, bytes.count - offset >= count else { throw truncated() }
        defer { offset += count }
        return Result { () throws(E) in try body(bytes[offset..<(offset + count)]) }
    }

    /// A 16-bit length, then that many bytes.
    package mutating func readLengthPrefixed() throws(CofferError) -> [UInt8] {
        try readBytes(Int(try readUInt16()))
    }

    /// Fails unless every byte has been read.
    package func finish() throws(CofferError) {
        guard offset == bytes.count else {
            throw CofferError(
                .decode,
                "\(what) has \(bytes.count - offset) unexpected trailing bytes; the vault may be damaged"
            )
        }
    }

    private mutating func read<T: FixedWidthInteger>(_: T.Type) throws(CofferError) -> T {
        let size = MemoryLayout<T>.size
        guard bytes.count - offset >= size else { throw truncated() }
        var value: T = 0
        for byte in bytes[offset..<(offset + size)] { value = value << 8 | T(byte) }
        offset += size
        return value
    }

    private func truncated() -> CofferError {
        CofferError(.decode, "\(what) is truncated; the vault may be damaged")
    }
}
