internal import COpenSSL
public import Foundation

/// A fixed-size buffer for key material that is wiped (`OPENSSL_cleanse`) when the last reference goes.
///
/// `SecureBytes` is immutable once built, so it is safe to share between threads; dropping every
/// reference is how a key is destroyed. It never prints its contents.
///
/// ```swift
/// let key = SecureBytes.random(count: 32)
/// key.withUnsafeBytes { bytes in /* use the key */ }
/// ```
public final class SecureBytes: @unchecked Sendable, ContiguousBytes, CustomStringConvertible {
    private let base: UnsafeMutableRawPointer

    /// The number of bytes held.
    public let count: Int

    private var storage: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: base, count: count) }

    /// Creates a buffer of `count` bytes filled in by `initializer`.
    ///
    /// - Parameters:
    ///   - count: The size in bytes.
    ///   - initializer: Writes the contents; the buffer starts zeroed.
    /// - Throws: Whatever `initializer` throws; the buffer is wiped first.
    public init<E: Error>(
        count: Int,
        initializer: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        precondition(count >= 0, "SecureBytes count must not be negative")
        self.count = count
        base = .allocate(byteCount: max(count, 1), alignment: 16)
        base.initializeMemory(as: UInt8.self, repeating: 0, count: max(count, 1))
        do {
            try initializer(UnsafeMutableRawBufferPointer(start: base, count: count))
        } catch {
            Self.wipe(UnsafeMutableRawBufferPointer(start: base, count: count))
            base.deallocate()
            throw error
        }
    }

    /// Copies `bytes` into a new secure buffer.
    public convenience init(copying bytes: some ContiguousBytes) {
        let count = bytes.withUnsafeBytes { $0.count }
        self.init(count: count) { buffer in bytes.withUnsafeBytes { buffer.copyMemory(from: $0) } }
    }

    /// `count` bytes from the operating system's secure random generator (`RAND_bytes`).
    public static func random(count: Int) -> SecureBytes {
        SecureBytes(count: count) { buffer in SecureRandom.fill(buffer) }
    }

    deinit {
        Self.wipe(storage)
        base.deallocate()
    }

    /// Calls `body` with the bytes. Do not let the pointer escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(storage))
    }

    /// Compares with `other` in time that depends only on the lengths.
    public func constantTimeEquals(_ other: some ContiguousBytes) -> Bool {
        withUnsafeBytes { mine in other.withUnsafeBytes { theirs in ConstantTime.equals(mine, theirs) } }
    }

    /// A description that never shows the contents.
    public var description: String { "SecureBytes(\(count) bytes)" }

    private static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        if let base = buffer.baseAddress, buffer.count > 0 { OPENSSL_cleanse(base, buffer.count) }
    }
}
