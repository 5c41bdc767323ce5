import CofferTestSupport
import Foundation
import Glibc

/// Reading and editing a vault's `data.mdb` byte by byte, for the tests that damage it on purpose.
enum DataFileBytes {
    /// The little-endian UInt64 at `offset` (LMDB's own byte order).
    static func integer(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        (0..<8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[offset + $1]) }
    }

    /// Stores `value` as a little-endian UInt64 at `offset`.
    static func setInteger(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt64) {
        for index in 0..<8 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
    }

    /// The offset of the meta page LMDB opens (the one with the larger transaction id).
    static func currentMeta(_ bytes: [UInt8]) -> Int {
        integer(bytes, 144) > integer(bytes, 4096 + 144) ? 0 : 4096
    }

    /// Rewrites the file at `url` as `body` edits its bytes.
    static func edit(_ url: URL, _ body: (inout [UInt8]) -> Void) throws {
        var bytes = [UInt8](try Data(contentsOf: url))
        body(&bytes)
        try Data(bytes).write(to: url)
    }
}

extension DataFileBytes {
    /// The root page of the named table `name` in the state LMDB opens (the main tree is one leaf in
    /// the vaults the tests make), or `nil`.
    static func tableRoot(_ bytes: [UInt8], _ name: String) -> Int? {
        func short(_ offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
        let main = Int(integer(bytes, currentMeta(bytes) + 128)) * 4096
        for slot in 0..<((short(main + 12) - 16) / 2) {
            let node = main + short(main + 16 + slot * 2)
            let keySize = short(node + 6)
            if Array(bytes[(node + 8)..<(node + 8 + keySize)]) == Array(name.utf8) {
                let root = integer(bytes, node + 8 + keySize + 40)
                return root == UInt64.max ? nil : Int(root)  // P_INVALID: an empty table
            }
        }
        return nil
    }

    /// The child page of branch page `page` at node `index`.
    static func child(_ bytes: [UInt8], _ page: Int, _ index: Int) -> Int {
        func short(_ offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
        let node = page * 4096 + short(page * 4096 + 16 + index * 2)
        return short(node) | short(node + 2) << 16 | short(node + 4) << 32
    }

    /// The flags of page `page` (1 branch, 2 leaf, 4 overflow).
    static func flags(_ bytes: [UInt8], _ page: Int) -> Int {
        Int(bytes[page * 4096 + 10]) | Int(bytes[page * 4096 + 11]) << 8
    }

    /// Sets the flags of page `page` in the file at `url` in place, with `pwrite` (the file keeps
    /// its inode, as a stray write or an edit would leave it).
    static func setFlags(_ url: URL, page: Int, to flags: UInt16) throws {
        let descriptor = open(url.path, O_WRONLY)
        guard descriptor >= 0 else { throw ProductError(description: "cannot open \(url.path)") }
        defer { close(descriptor) }
        var value = flags.littleEndian
        guard pwrite(descriptor, &value, 2, off_t(page * 4096 + 10)) == 2 else {
            throw ProductError(description: "cannot write \(url.path)")
        }
    }

    /// The second leaf of table `name`, whose root must be a branch over leaves.
    static func secondLeaf(of name: String, in url: URL) throws -> Int {
        let bytes = [UInt8](try Data(contentsOf: url))
        guard let root = tableRoot(bytes, name), flags(bytes, root) == 1 else {
            throw ProductError(description: "table '\(name)' has no branch root")
        }
        let leaf = child(bytes, root, 1)
        guard flags(bytes, leaf) == 2 else { throw ProductError(description: "page \(leaf) is not a leaf") }
        return leaf
    }
}

extension DataFileBytes {
    /// The first overflow page of every value of table `name` stored on overflow pages, in key order.
    static func overflowRuns(of name: String, in bytes: [UInt8]) -> [Int] {
        func short(_ offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
        guard let root = tableRoot(bytes, name) else { return [] }
        var runs: [Int] = []
        var pending = [root]
        while let page = pending.popLast() {
            let count = (short(page * 4096 + 12) - 16) / 2
            if flags(bytes, page) == 1 {
                pending += (0..<count).reversed().map { child(bytes, page, $0) }
                continue
            }
            for slot in 0..<count {
                let node = page * 4096 + short(page * 4096 + 16 + slot * 2)
                if short(node + 4) & 1 != 0 { runs.append(Int(integer(bytes, node + 8 + short(node + 6)))) }
            }
        }
        return runs
    }
}
