import Foundation
import Testing

@testable import Coffer

/// The data file checker's own arithmetic, against LMDB's.
@Suite("Data file check: overflow page counts")
struct DataFileCheckTests {
    /// LMDB's `OVPAGES(size, psize)`: `((PAGEHDRSZ - 1 + size) / psize) + 1`, with a 16-byte header.
    static func lmdbOverflowPages(_ size: Int, _ pageSize: Int) -> UInt64 { UInt64((16 - 1 + size) / pageSize + 1) }

    @Test("a value stored out of its node takes the pages LMDB gives it, header included")
    func overflowPages() {
        for pageSize in [4096, 8192, 16384] {
            for size in Array(1...(3 * pageSize)) where size % 7 == 0 || size % pageSize >= pageSize - 24 {
                #expect(
                    DataFileCheck.overflowPages(size: size, pageSize: pageSize)
                        == Self.lmdbOverflowPages(size, pageSize),
                    "size \(size), page \(pageSize)"
                )
            }
        }
        // The free-list record that exposed it: 510 page ids and their count, 4,088 bytes, two pages.
        #expect(DataFileCheck.overflowPages(size: 8 + 510 * 8, pageSize: 4096) == 2)
    }
}
