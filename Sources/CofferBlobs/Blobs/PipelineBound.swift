import Foundation

/// The blob write pipeline with storage taken out, as the reference the `blobs` benchmarks compare
/// with: the same chunking, the same workers (chunk id, zstd, AES-GCM on every core, every chunk sealed
/// as if new) and the same in-order SHA-256 of the content, but no LMDB, no dedup lookup and no
/// commits. What a write achieves as a fraction of this is what storage costs.
package enum PipelineBound {
    /// Runs the pipeline over the file at `path` and returns how many bytes went through.
    package static func run(file path: String, compressionLevel: Int = 3) throws(CofferError) -> Int64 {
        let file = try InputFile(path: path)
        var source = FileDescriptorSource(descriptor: file.descriptor)
        let seed = SecureBytes.random(count: 32)
        let gear: GearTable
        do {
            gear = try GearTable(seed: seed)
        } catch {
            throw CofferError(.internalError, "deriving a gear table failed: \(error)", underlying: error)
        }
        let idKey = SecureBytes.random(count: 32)
        let sealKey = SecureBytes.random(count: 32)
        let workers = OrderedPipeline<[UInt8], Int>.defaultWorkerCount
        let pipeline = OrderedPipeline<[UInt8], [UInt8]>(workers: workers, window: workers * 16) {
            () throws(CofferError) in
            let keys = try ChunkKeys(scope: .syncable, level: .afterFirstUnlock, idKey: idKey, sealKey: sealKey)
            let coder = try ChunkRecord.Coder(compressionLevel: compressionLevel)
            return { (plaintext) throws(CofferError) in
                let id = try keys.id(of: plaintext)
                _ = try plaintext.withBytes { (raw) throws(CofferError) in
                    try ChunkRecord.seal(raw, id: id, keys: keys, coder: coder)
                }
                return plaintext
            }
        }
        defer { pipeline.shutDown() }
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { finished.signal() }
            guard let hasher = try? SHA256() else { return }
            while let plaintext = try? pipeline.next() { try? hasher.update(plaintext) }
            _ = try? hasher.finalize()
        }
        var total: Int64 = 0
        var buffer: [UInt8] = []
        let chunker = FastCDC(gear: gear)
        try ContentSession<Void>.chunk(&source, with: chunker, buffer: &buffer) { (piece) throws(CofferError) in
            total += Int64(piece.count)
            try pipeline.submit(piece)
        }
        pipeline.finishSubmitting()
        finished.wait()
        return total
    }
}
