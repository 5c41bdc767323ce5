import Foundation
internal import Glibc

extension ContentReader {
    /// Whether the regular file open as `descriptor` holds exactly a snapshot file's content: its size,
    /// then each chunk's bytes read from the file and hashed to the chunk's keyed id, compared with the
    /// id the snapshot records (restic's check of an existing file, blob by blob). No chunk is opened
    /// or decrypted; the first mismatch ends the check.
    ///
    /// - Parameters:
    ///   - content: The snapshot file's content.
    ///   - descriptor: The existing file, open for reading.
    ///   - context: The worker's read context.
    /// - Throws: ``CofferError`` when the chunk list cannot be read, `.userCanceled` at a stop request;
    ///   a file that cannot be read is simply not a match.
    package func matches(
        _ content: FileContent,
        descriptor: Int32,
        context: ContentReadContext
    ) throws(CofferError) -> Bool {
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
            UInt64(status.st_size) == content.size
        else { return false }
        let chunkKeys = try context.chunkKeys(for: content)
        var buffer: [UInt8] = []
        var isMatch = true
        try content.chunks.forEachEntry(
            loadListChunk: { (reference) throws(CofferError) in
                try storage("reading a chunk list") {
                    try environment.read { txn in
                        try store.listChunkEntries(reference, keys: chunkKeys, coder: context.coder, in: txn)
                    }
                }
            },
            { (entry, offset) throws(CofferError) in
                try Interruption.check()
                let length = Int(entry.length)
                if buffer.count < length { buffer = [UInt8](repeating: 0, count: length) }
                var done = 0
                while done < length {
                    let read = buffer.withUnsafeMutableBytes { raw in
                        valueOrErrno {
                            pread(descriptor, raw.baseAddress! + done, length - done, off_t(offset) + off_t(done))
                        }
                    }
                    guard case .success(let count) = read, count > 0 else {
                        isMatch = false
                        return false
                    }
                    done += count
                }
                isMatch = try chunkKeys.id(of: buffer[0..<length]) == entry.id
                return isMatch
            }
        )
        return isMatch
    }
}
