/// A byte source that counts what passes through it and reports the running total.
package struct CountingSource<Base: ByteSource>: ByteSource {
    private var base: Base
    private let progress: (@Sendable (Int64) -> Void)?
    package private(set) var count: Int64 = 0

    package init(_ base: Base, progress: (@Sendable (Int64) -> Void)?) {
        self.base = base
        self.progress = progress
    }

    package mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(CofferError) -> Int {
        let read = try base.read(into: buffer)
        count += Int64(read)
        progress?(count)
        return read
    }
}

/// A byte sink that counts what passes through it and reports the running total.
package struct CountingSink<Base: ByteSink>: ByteSink {
    /// The sink written to.
    package private(set) var base: Base
    private let progress: (@Sendable (Int64) -> Void)?
    package private(set) var count: Int64 = 0

    package init(_ base: Base, progress: (@Sendable (Int64) -> Void)?) {
        self.base = base
        self.progress = progress
    }

    package mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        try base.write(bytes)
        count += Int64(bytes.count)
        progress?(count)
    }
}
