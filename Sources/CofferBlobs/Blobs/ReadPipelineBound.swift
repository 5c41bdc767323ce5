import Foundation

/// The blob read pipeline with storage taken out, as the reference `blobs/read` compares with: the
/// chunks of a file sealed once into memory, then every run opens them all as a read does (AES-GCM,
/// zstd, the chunk id recomputed and checked) on every core, in order, with the SHA-256 of the
/// content, but with no LMDB, no manifest and no output. What a read achieves as a fraction of this
/// is what storage and the output cost.
package struct ReadPipelineBound: Sendable {
    private let chunks: [(id: ChunkID, record: [UInt8])]
    private let idKey: SecureBytes
    private let sealKey: SecureBytes
    /// The content's size: what a run reads.
    package let bytes: Int64

    /// Chunks the file at `path` and seals every chunk into memory.
    package init(file path: String, compressionLevel: Int = 3) throws(CofferError) {
        let file = try InputFile(path: path)
        var source = FileDescriptorSource(descriptor: file.descriptor)
        let gear: GearTable
        do {
            gear = try GearTable(seed: SecureBytes.random(count: 32))
        } catch {
            throw CofferError(.internalError, "deriving a gear table failed: \(error)", underlying: error)
        }
        idKey = SecureBytes.random(count: 32)
        sealKey = SecureBytes.random(count: 32)
        let keys = try ChunkKeys(scope: .syncable, level: .afterFirstUnlock, idKey: idKey, sealKey: sealKey)
        let coder = try ChunkRecord.Coder(compressionLevel: compressionLevel)
        var chunks: [(id: ChunkID, record: [UInt8])] = []
        var total: Int64 = 0
        var buffer: [UInt8] = []
        try ContentSession<Void>.chunk(&source, with: FastCDC(gear: gear), buffer: &buffer) {
            (piece) throws(CofferError) in
            let id = try keys.id(of: piece)
            let record = try piece.withBytes { (raw) throws(CofferError) in
                try ChunkRecord.seal(raw, id: id, keys: keys, coder: coder)
            }
            chunks.append((id, record))
            total += Int64(piece.count)
        }
        self.chunks = chunks
        bytes = total
    }

    /// Opens every chunk, in order, on every core, and digests the content; returns the bytes read.
    @discardableResult
    package func run() throws(CofferError) -> Int64 {
        let workers = OrderedPipeline<Int, [UInt8]>.defaultWorkerCount
        let chunks = chunks
        let (idKey, sealKey) = (idKey, sealKey)
        let pipeline = OrderedPipeline<Int, [UInt8]>(workers: workers, window: workers * 16) {
            () throws(CofferError) in
            let keys = try ChunkKeys(scope: .syncable, level: .afterFirstUnlock, idKey: idKey, sealKey: sealKey)
            let coder = try ChunkRecord.Coder()
            return { (index) throws(CofferError) in
                try chunks[index].record.withBytes { (raw) throws(CofferError) in
                    try ChunkRecord.open(raw, id: chunks[index].id, keys: keys, coder: coder)
                }
            }
        }
        defer { pipeline.shutDown() }
        let hasher: SHA256
        do {
            hasher = try SHA256()
        } catch {
            throw CofferError(.internalError, "creating a digest context failed: \(error)", underlying: error)
        }
        var read: Int64 = 0
        func take() throws(CofferError) -> Bool {
            guard let plaintext = try pipeline.next() else { return false }
            read += Int64(plaintext.count)
            do {
                try hasher.update(plaintext)
            } catch {
                throw CofferError(.internalError, "hashing failed: \(error)", underlying: error)
            }
            return true
        }
        for index in chunks.indices {
            while !pipeline.hasRoom { _ = try take() }
            try pipeline.submit(index)
        }
        pipeline.finishSubmitting()
        while try take() {}
        do {
            _ = try hasher.finalize()
        } catch {
            throw CofferError(.internalError, "hashing failed: \(error)", underlying: error)
        }
        return read
    }
}
