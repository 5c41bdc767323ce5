/// One B-tree page of an LMDB 0.9 data file (a branch or a leaf), read with `pread` and checked
/// before anything follows it: Coffer's own reader, so that a damaged page is named instead of being
/// handed to LMDB, whose walk asserts (`IS_LEAF(mp)`, exit 134) or reads outside the page (`SIGSEGV`).
///
/// The layout is LMDB 0.9's (`MDB_page`, `MDB_node` in mdb.c; docs/FORMAT.md, "The data file"): a
/// 16-byte header (page number, padding, flags, lower, upper), then `(lower − 16) / 2` offsets of
/// nodes kept in key order, the nodes themselves packed at the end of the page from `upper` on. A
/// node is its data size or child page (low 16 bits, high 16 bits), its flags (or the child's top 16
/// bits), its key size, the key, then on a leaf the data inline, or the first page of an overflow run
/// (`F_BIGDATA`), or a table's 48-byte descriptor (`F_SUBDATA`).
package struct TreePage {
    /// One node of the page, its bounds already checked against the page.
    package struct Node {
        /// The node's flags on a leaf (`F_BIGDATA` 1, `F_SUBDATA` 2).
        package let flags: UInt16
        /// Where the key lies in the page.
        package let key: Range<Int>
        /// On a branch, the child page.
        package let child: UInt64
        /// On a leaf, the value's size.
        package let dataSize: Int
        /// On a leaf, where the value (inline), or the overflow page number, or the descriptor lies.
        package let data: Range<Int>
    }

    /// What is wrong with a page, for people.
    package struct Problem: Error, Sendable {
        /// The sentence, naming the page.
        package let description: String
    }

    package static let branchFlag: UInt16 = 0x01
    package static let leafFlag: UInt16 = 0x02
    package static let overflowFlag: UInt16 = 0x04
    package static let bigData: UInt16 = 0x01
    package static let subDatabase: UInt16 = 0x02
    private static let duplicates: UInt16 = 0x04
    /// LMDB 0.9's largest key.
    private static let maximumKeySize = 511

    /// The page's number.
    package let number: UInt64
    /// Whether it is a branch page (else a leaf).
    package let isBranch: Bool
    /// Its bytes.
    package let bytes: [UInt8]
    /// Its nodes, in key order.
    package let nodes: [Node]

    /// Reads and checks page `number` from `bytes` (one page): its header names it and says branch
    /// or leaf (and `expectBranch`, when the tree's depth tells, agrees), the offsets lie between
    /// the header and the page's end, each node lies whole inside the page without overlapping
    /// another, keys are in strictly increasing order (little-endian integers where `integerKeys`,
    /// as in the free list; else bytes, as LMDB's default comparison), a branch has at least
    /// `minimumBranchKeys` nodes and a leaf at least one.
    ///
    /// - Throws: ``Problem`` naming the page and what is wrong.
    package init(
        _ bytes: [UInt8],
        number: UInt64,
        expectBranch: Bool?,
        integerKeys: Bool,
        minimumBranchKeys: Int
    ) throws(Problem) {
        let pageSize = bytes.count
        func integer<T: FixedWidthInteger>(_ offset: Int, as type: T.Type) -> T {
            DataFileCheck.integer(bytes, offset, as: type)
        }
        func fail(_ what: String) -> Problem { Problem(description: "page \(number) \(what)") }
        guard pageSize >= DataFileCheck.headerSize else { throw fail("lies past the end of the file") }
        let header = integer(0, as: UInt64.self)
        guard header == number else { throw fail("says it is page \(header): it is not where it belongs") }
        let flags = integer(10, as: UInt16.self)
        // LMDB writes a tree page with its kind alone (it clears the dirty bit, 0x10, as it writes):
        // any other bit set is damage, which its next copy of the page would carry on.
        let kind = flags & ~0x10
        guard kind == Self.branchFlag || kind == Self.leafFlag else {
            let what =
                kind & Self.overflowFlag != 0
                ? "an overflow page" : kind & 0x08 != 0 ? "a meta page" : "no tree page (flags \(flags))"
            throw fail("is \(what) where the tree needs a branch or a leaf")
        }
        let isBranch = kind == Self.branchFlag
        if let expectBranch, expectBranch != isBranch {
            throw fail(
                "is a \(isBranch ? "branch" : "leaf") where the tree's depth needs a \(isBranch ? "leaf" : "branch")"
            )
        }
        let lower = Int(integer(12, as: UInt16.self))
        let upper = Int(integer(14, as: UInt16.self))
        guard lower >= DataFileCheck.headerSize, (lower - DataFileCheck.headerSize) % 2 == 0, lower <= upper,
            upper <= pageSize
        else { throw fail("has free-space bounds \(lower) and \(upper) that do not fit a \(pageSize)-byte page") }
        let count = (lower - DataFileCheck.headerSize) / 2
        guard count >= (isBranch ? minimumBranchKeys : 1) else {
            throw fail("is a \(isBranch ? "branch" : "leaf") with \(count) nodes")
        }
        var nodes: [Node] = []
        nodes.reserveCapacity(count)
        var extents: [Range<Int>] = []
        extents.reserveCapacity(count)
        for slot in 0..<count {
            let offset = Int(integer(DataFileCheck.headerSize + slot * 2, as: UInt16.self))
            guard offset >= upper, offset % 2 == 0, offset + 8 <= pageSize else {
                throw fail("has node \(slot) at offset \(offset), outside the page's node space")
            }
            let low = UInt64(integer(offset, as: UInt16.self))
            let high = UInt64(integer(offset + 2, as: UInt16.self))
            let nodeFlags = integer(offset + 4, as: UInt16.self)
            let keySize = Int(integer(offset + 6, as: UInt16.self))
            let keyStart = offset + 8
            guard keySize <= Self.maximumKeySize else { throw fail("has node \(slot) with a \(keySize)-byte key") }
            let node: Node
            if isBranch {
                node = Node(
                    flags: 0,
                    key: keyStart..<(keyStart + keySize),
                    child: low | high << 16 | UInt64(nodeFlags) << 32,
                    dataSize: 0,
                    data: (keyStart + keySize)..<(keyStart + keySize)
                )
            } else {
                guard nodeFlags & ~(Self.bigData | Self.subDatabase | Self.duplicates) == 0,
                    nodeFlags & (Self.bigData | Self.subDatabase) != (Self.bigData | Self.subDatabase)
                else { throw fail("has node \(slot) with flags \(nodeFlags), which LMDB never writes") }
                guard nodeFlags & Self.duplicates == 0 else {
                    throw fail("holds duplicate-sorted data, which Coffer never writes")
                }
                let dataSize = Int(low | high << 16)
                let stored = nodeFlags & Self.bigData != 0 ? 8 : dataSize
                if nodeFlags & Self.subDatabase != 0, dataSize != 48 {
                    throw fail("has a table descriptor of \(dataSize) bytes, not 48")
                }
                node = Node(
                    flags: nodeFlags,
                    key: keyStart..<(keyStart + keySize),
                    child: 0,
                    dataSize: dataSize,
                    data: (keyStart + keySize)..<(keyStart + keySize + stored)
                )
            }
            guard node.data.upperBound <= pageSize else { throw fail("has node \(slot) running past the page's end") }
            nodes.append(node)
            extents.append(offset..<node.data.upperBound)
        }
        // LMDB keeps the nodes packed from `upper` to the page's end, each taking an even number
        // of bytes (it moves the rest when one is deleted): a gap or an overlap is damage, and so is
        // an `upper` that is not the first node's offset (the next write would put a node there).
        extents.sort { $0.lowerBound < $1.lowerBound }
        var expected = upper
        for extent in extents {
            guard extent.lowerBound == expected else {
                throw fail(
                    extent.lowerBound < expected
                        ? "has nodes that overlap at offset \(extent.lowerBound)"
                        : "has a gap between its nodes at offset \(expected), or an upper bound (\(upper)) that is not its first node's"
                )
            }
            expected += (extent.count + 1) & ~1
        }
        guard expected == pageSize else {
            throw fail("has nodes that end at offset \(expected), not at the page's end")
        }
        // A branch's first key is never compared (it stands for everything before the second).
        for index in (isBranch ? 2 : 1)..<max(nodes.count, isBranch ? 2 : 1) {
            let before = bytes[nodes[index - 1].key]
            let after = bytes[nodes[index].key]
            let ordered: Bool
            if integerKeys {
                ordered =
                    before.count == 8 && after.count == 8
                    && DataFileCheck.integer(Array(before), 0, as: UInt64.self)
                        < DataFileCheck.integer(Array(after), 0, as: UInt64.self)
            } else {
                ordered = before.lexicographicallyPrecedes(after)
            }
            guard ordered else { throw fail("has keys out of order at nodes \(index - 1) and \(index)") }
        }
        self.number = number
        self.isBranch = isBranch
        self.bytes = bytes
        self.nodes = nodes
    }
}
