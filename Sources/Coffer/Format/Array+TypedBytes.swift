extension Array where Element == UInt8 {
    /// `withUnsafeBytes` for closures with a typed error (the standard one rethrows untyped).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(CofferError) -> R) throws(CofferError) -> R {
        try withUnsafeBytes { raw in Result { () throws(CofferError) in try body(raw) } }.get()
    }

    /// `withUnsafeMutableBytes` for closures with a typed error.
    mutating func withMutableBytes<R>(
        _ body: (UnsafeMutableRawBufferPointer) throws(CofferError) -> R
    ) throws(CofferError) -> R {
        try withUnsafeMutableBytes { raw in Result { () throws(CofferError) in try body(raw) } }.get()
    }
}
