internal import CZstd
package import Foundation

/// The one place zstd results are checked: every `ZSTD_*` call that can fail passes through here.
package enum ZstdCall {
    /// Returns `result` if it is not a zstd error code, else throws with zstd's error name.
    @inline(__always)
    package static func check(_ result: Int, _ operation: StaticString) throws(CompressionError) -> Int {
        guard ZSTD_isError(result) != 0 else { return result }
        let name = String(cString: ZSTD_getErrorName(result))
        let kind: CompressionError.Kind
        switch ZSTD_getErrorCode(result) {
        case ZSTD_error_dstSize_tooSmall: kind = .exceedsLimit
        case ZSTD_error_memory_allocation: kind = .library
        case ZSTD_error_parameter_outOfBound, ZSTD_error_parameter_unsupported: kind = .invalidArgument
        default: kind = .corrupt
        }
        throw CompressionError(kind: kind, operation: "\(operation)", reason: name)
    }

    /// Unwraps a context pointer that is NULL when allocation fails.
    package static func check(
        _ pointer: OpaquePointer?,
        _ operation: StaticString
    ) throws(CompressionError) -> OpaquePointer {
        guard let pointer else {
            throw CompressionError(kind: .library, operation: "\(operation)", reason: "out of memory")
        }
        return pointer
    }
}

/// A zstd compressor with a reused context (`ZSTD_CCtx`). Not thread-safe: one per thread.
///
/// ```swift
/// let compressor = try ZstdCompressor(level: 3)
/// let frame = try compressor.compress(bytes)
/// ```
package final class ZstdCompressor {
    /// The compression levels zstd accepts (`ZSTD_minCLevel()...ZSTD_maxCLevel()`).
    package static var levels: ClosedRange<Int> { Int(ZSTD_minCLevel())...Int(ZSTD_maxCLevel()) }

    /// The default level: zstd's own default, a good speed/ratio balance for mixed data.
    package static let defaultLevel = 3

    /// The level in use.
    package let level: Int
    private let context: OpaquePointer

    /// Creates a compressor at `level`.
    ///
    /// - Throws: ``CompressionError`` `.invalidArgument` for a level outside ``levels``.
    package init(level: Int = ZstdCompressor.defaultLevel) throws(CompressionError) {
        guard Self.levels.contains(level) else {
            throw CompressionError(
                kind: .invalidArgument,
                operation: "zstd",
                reason: "compression level \(level) is outside \(Self.levels.lowerBound)...\(Self.levels.upperBound)"
            )
        }
        self.level = level
        context = try ZstdCall.check(ZSTD_createCCtx(), "ZSTD_createCCtx")
        do {
            _ = try ZstdCall.check(
                ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, Int32(level)),
                "ZSTD_CCtx_setParameter"
            )
            // The content size lets a reader size its buffer and refuse frames that claim too much.
            _ = try ZstdCall.check(
                ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 1),
                "ZSTD_CCtx_setParameter"
            )
        } catch {
            ZSTD_freeCCtx(context)
            throw error
        }
    }

    deinit { ZSTD_freeCCtx(context) }

    /// Compresses `input` into one zstd frame (`ZSTD_compress2`).
    package func compress(_ input: some ContiguousBytes) throws(CompressionError) -> [UInt8] {
        let result = input.withUnsafeBytes { source in
            Result { () throws(CompressionError) -> [UInt8] in
                let bound = ZSTD_compressBound(source.count)
                var status = 0
                // Uninitialised capacity: zstd writes the first `count` bytes, and only those are kept.
                let output = [UInt8](unsafeUninitializedCapacity: bound) { destination, count in
                    status = ZSTD_compress2(context, destination.baseAddress, bound, source.baseAddress, source.count)
                    count = ZSTD_isError(status) != 0 ? 0 : status
                }
                _ = try ZstdCall.check(status, "ZSTD_compress2")
                return output
            }
        }
        return try result.get()
    }
}

/// A zstd decompressor with a reused context (`ZSTD_DCtx`) that never writes past a caller's limit.
/// Not thread-safe: one per thread.
package final class ZstdDecompressor {
    private let context: OpaquePointer

    /// Creates a decompressor.
    package init() throws(CompressionError) {
        context = try ZstdCall.check(ZSTD_createDCtx(), "ZSTD_createDCtx")
    }

    deinit { ZSTD_freeDCtx(context) }

    /// Decompresses `frame`, refusing to produce more than `limit` bytes.
    ///
    /// The frame's declared content size is checked before any buffer is allocated, and the output
    /// buffer is exactly `limit` bytes, so a hostile frame can neither make us allocate more nor write
    /// more, whatever its header claims.
    ///
    /// - Throws: ``CompressionError`` `.exceedsLimit` if the content is larger than `limit`,
    ///   `.corrupt` if the input is not valid zstd.
    package func decompress(_ frame: some ContiguousBytes, limit: Int) throws(CompressionError) -> [UInt8] {
        let result = frame.withUnsafeBytes { source in
            Result { () throws(CompressionError) -> [UInt8] in
                let declared = ZSTD_getFrameContentSize(source.baseAddress, source.count)
                if declared == ZSTD_CONTENTSIZE_ERROR {
                    throw CompressionError(
                        kind: .corrupt,
                        operation: "ZSTD_getFrameContentSize",
                        reason: "not a zstd frame"
                    )
                }
                if declared != ZSTD_CONTENTSIZE_UNKNOWN, declared > UInt64(limit) {
                    throw CompressionError(
                        kind: .exceedsLimit,
                        operation: "zstd",
                        reason: "frame declares \(declared) bytes, over the limit of \(limit)"
                    )
                }
                var output = [UInt8](repeating: 0, count: limit)
                let status = output.withUnsafeMutableBytes { destination in
                    ZSTD_decompressDCtx(context, destination.baseAddress, limit, source.baseAddress, source.count)
                }
                let written = try ZstdCall.check(status, "ZSTD_decompressDCtx")
                output.removeLast(limit - written)
                return output
            }
        }
        return try result.get()
    }
}
