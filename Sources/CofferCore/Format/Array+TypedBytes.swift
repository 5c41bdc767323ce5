extension Array where Element == UInt8 {
    /// `withUnsafeBytes` for closures with a typed error (the standard one rethrows untyped).
    package func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withUnsafeBytes { raw in Result { () throws(E) in try body(raw) } }.get()
    }

    /// `withUnsafeMutableBytes` for closures with a typed error.
    package mutating func withMutableBytes<R, E: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try withUnsafeMutableBytes { raw in Result { () throws(E) in try body(raw) } }.get()
    }
}
