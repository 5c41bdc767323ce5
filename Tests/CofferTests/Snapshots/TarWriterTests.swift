import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// `dump`'s tar headers where ustar's fields are too small (issue 39, finding 7): every value that
/// does not fit goes in a pax record and the field holds 0, as GNU tar writes it; nothing wraps.
@Suite("Tar headers: pax records where ustar overflows")
struct TarWriterTests {
    /// One member's headers (no content follows), as bytes.
    func header(size: UInt64, uid: UInt32 = 0, gid: UInt32 = 0, modified: Int64 = 0) throws -> Data {
        var writer = TarWriter(sink: DataSink())
        try writer.header(
            name: Array("big.img".utf8),
            kind: .file(size: size),
            mode: 0o644,
            uid: uid,
            gid: gid,
            modified: modified
        )
        return writer.sink.data
    }

    /// The numeric ustar field at `offset` of the last header block, as its text.
    func field(_ data: Data, at offset: Int, width: Int) -> String {
        let block = data.suffix(512)
        let start = block.startIndex + offset
        return String(decoding: block[start..<(start + width - 1)], as: UTF8.self)
    }

    @Test(
        "values that fit stay in ustar fields alone; each that does not gets its pax record and a zero field",
        arguments: [
            (size: UInt64(1 << 33) - 1, uid: UInt32((1 << 21) - 1), modified: Int64(1 << 33) - 1, records: [String]()),
            (size: UInt64(1 << 33) + 5, uid: UInt32(0), modified: Int64(0), records: ["size=8589934597"]),
            (size: UInt64(1), uid: UInt32(1 << 21), modified: Int64(0), records: ["uid=2097152"]),
            (size: UInt64(1), uid: UInt32(0), modified: Int64(-1), records: ["mtime=-1"]),
            (size: UInt64(1), uid: UInt32(0), modified: Int64(1 << 33), records: ["mtime=8589934592"]),
        ]
    )
    func overflow(size: UInt64, uid: UInt32, modified: Int64, records: [String]) throws {
        let data = try header(size: size, uid: uid, gid: uid, modified: modified)
        let text = String(decoding: data.prefix(data.count - 512), as: UTF8.self)
        #expect(data.count == (records.isEmpty ? 512 : 1536))  // pax header, its records, the ustar header
        for record in records { #expect(text.contains(record), "\(text)") }
        if records.contains(where: { $0.hasPrefix("uid") }) { #expect(text.contains("gid=\(uid)")) }
        #expect(
            field(data, at: 124, width: 12) == (size < 1 << 33 ? String(size, radix: 8).leftPadded(11) : "00000000000")
        )
        #expect(field(data, at: 108, width: 8) == (uid < 1 << 21 ? String(uid, radix: 8).leftPadded(7) : "0000000"))
        let time = modified >= 0 && modified < 1 << 33 ? String(modified, radix: 8).leftPadded(11) : "00000000000"
        #expect(field(data, at: 136, width: 12) == time)
    }

    @Test("Python's tarfile reads a size of 8 GiB and more from the pax record")
    func pythonReadsSize() throws {
        let archive = try TemporaryDirectory()
        let file = archive.path("header.tar")
        try header(size: (1 << 33) + 5, uid: 3_000_000, gid: 3_000_001, modified: -315_619_200).write(to: file)
        let read = try Products.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                "-c",
                "import sys, tarfile; m = tarfile.open(sys.argv[1], mode='r|').next(); print(m.size, m.uid, m.gid, int(m.mtime))",
                file.path,
            ]
        )
        #expect(read.output == "8589934597 3000000 3000001 -315619200\n", "\(read.output) \(read.error)")
    }
}

extension String {
    /// Zeros in front up to `width` characters.
    fileprivate func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
