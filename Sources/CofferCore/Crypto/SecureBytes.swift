internal import COpenSSL
public import Foundation
internal import Synchronization

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
        // Filled before any stored property is set: a class whose initializer throws after that runs
        // its deinit, which would free the buffer a second time.
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: max(count, 1))
        do {
            try initializer(UnsafeMutableRawBufferPointer(start: buffer, count: count))
        } catch {
            Self.wipe(UnsafeMutableRawBufferPointer(start: buffer, count: count))
            buffer.deallocate()
            throw error
        }
        self.count = count
        base = buffer
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
        if Self.witnessing.load(ordering: .relaxed) { Self.witness.withLock { $0?.saw(self, storage) } }
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

    // MARK: Watching wipes, for tests

    /// Records the buffers wiped while it is installed, so a test can check that keys really were
    /// destroyed (not merely dropped from a table while something else still holds them).
    package final class WipeWitness: Sendable {
        private let wiped = Locked<[ObjectIdentifier: Bool]>([:])

        /// For each buffer wiped so far, by identity: whether its bytes were all zero afterwards.
        package var wipes: [ObjectIdentifier: Bool] { wiped.withLock { $0 } }

        fileprivate func saw(_ bytes: SecureBytes, _ buffer: UnsafeMutableRawBufferPointer) {
            let zero = buffer.allSatisfy { $0 == 0 }
            wiped.withLock { $0[ObjectIdentifier(bytes)] = zero }
        }
    }

    private static let witness = Locked<WipeWitness?>(nil)
    private static let witnessing = Atomic<Bool>(false)

    /// Runs `body` with a witness of every wipe installed: one at a time, for tests only.
    package static func witnessingWipes<R>(_ body: (WipeWitness) throws -> R) rethrows -> R {
        let current = WipeWitness()
        witness.withLock { installed in
            precondition(installed == nil, "one wipe witness at a time")
            installed = current
        }
        witnessing.store(true, ordering: .relaxed)
        defer {
            witnessing.store(false, ordering: .relaxed)
            witness.withLock { $0 = nil }
        }
        return try body(current)
    }
}
