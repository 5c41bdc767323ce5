/// Writes a POSIX tar stream (ustar, with pax extended headers where ustar's fields fall short), for
/// `coffer dump` of a directory: GNU tar, bsdtar and Python's tarfile read it. Names are the
/// snapshot's bytes; a name or link target that is longer than ustar's fields or not plain ASCII goes
/// in a pax `path` / `linkpath` record, as the bytes it is (GNU tar and bsdtar take them so; GNU tar
/// warns about the `hdrcharset` record that would declare them), a size of 8 GiB or more in a `size`
/// record, a uid or gid of 8^7 (2,097,152) or more in a `uid` / `gid` record, and a modification time
/// before 1970 or from 8^11 seconds on (2242) in an `mtime` record (negative where it is before 1970).
/// The ustar field of a value given in a record holds 0, as GNU tar writes it; nothing wraps.
package struct TarWriter<Sink: ByteSink> {
    /// What a header describes.
    package enum Kind {
        case file(size: UInt64)
        case directory
        case symlink(target: [UInt8])
        case hardLink(to: [UInt8])
        case fifo
    }

    package private(set) var sink: Sink
    /// Bytes written so far, to pad each file to a whole block.
    private var written: UInt64 = 0

    package init(sink: Sink) { self.sink = sink }

    /// The header of one member; a file's content follows through ``writeContent(_:)``, then
    /// ``endFile()``.
    package mutating func header(
        name: [UInt8],
        kind: Kind,
        mode: UInt32,
        uid: UInt32,
        gid: UInt32,
        modified: Int64
    ) throws(CofferError) {
        var name = name
        if case .directory = kind, name.last != UInt8(ascii: "/") { name.append(UInt8(ascii: "/")) }
        var records: [(String, [UInt8])] = []
        let link: [UInt8]
        switch kind {
        case .symlink(let target), .hardLink(let target): link = target
        default: link = []
        }
        if !Self.fitsUstar(name, 100) { records.append(("path", name)) }
        if !Self.fitsUstar(link, 100) { records.append(("linkpath", link)) }
        var size: UInt64 = 0
        if case .file(let fileSize) = kind { size = fileSize }
        if size >= Self.octalLimit { records.append(("size", Array(String(size).utf8))) }
        let uidFits = UInt64(uid) < Self.idLimit
        let gidFits = UInt64(gid) < Self.idLimit
        let timeFits = modified >= 0 && modified < Int64(Self.octalLimit)
        if !uidFits { records.append(("uid", Array(String(uid).utf8))) }
        if !gidFits { records.append(("gid", Array(String(gid).utf8))) }
        if !timeFits { records.append(("mtime", Array(String(modified).utf8))) }
        if !records.isEmpty {
            let body = records.flatMap { Self.paxRecord($0.0, $0.1) }
            try write(
                Self.block(
                    name: Array("PaxHeaders/".utf8) + Array(name.suffix(80)).filter { $0 < 0x80 && $0 >= 0x20 },
                    mode: 0o644,
                    uid: 0,
                    gid: 0,
                    size: UInt64(body.count),
                    modified: timeFits ? modified : 0,
                    type: UInt8(ascii: "x"),
                    link: []
                )
            )
            try write(body)
            try pad(UInt64(body.count))
        }
        let type: UInt8
        switch kind {
        case .file: type = UInt8(ascii: "0")
        case .directory: type = UInt8(ascii: "5")
        case .symlink: type = UInt8(ascii: "2")
        case .hardLink: type = UInt8(ascii: "1")
        case .fifo: type = UInt8(ascii: "6")
        }
        try write(
            Self.block(
                name: Self.fitsUstar(name, 100) ? name : Array(name.prefix(100)),
                mode: mode & 0o7777,
                uid: uidFits ? uid : 0,
                gid: gidFits ? gid : 0,
                size: size < Self.octalLimit ? size : 0,
                modified: timeFits ? modified : 0,
                type: type,
                link: Self.fitsUstar(link, 100) ? link : Array(link.prefix(100))
            )
        )
        written = 0
    }

    /// Part of the current file's content.
    package mutating func writeContent(_ bytes: UnsafeRawBufferPointer) throws(CofferError) {
        try sink.write(bytes)
        written += UInt64(bytes.count)
    }

    /// Pads the current file's content to a whole block.
    package mutating func endFile() throws(CofferError) { try pad(written) }

    /// The two zero blocks that end an archive.
    package mutating func finish() throws(CofferError) { try write([UInt8](repeating: 0, count: 1024)) }

    private mutating func write(_ bytes: [UInt8]) throws(CofferError) {
        try bytes.withBytes { (raw) throws(CofferError) in try sink.write(raw) }
    }

    private mutating func pad(_ count: UInt64) throws(CofferError) {
        let remainder = Int(count % 512)
        if remainder > 0 { try write([UInt8](repeating: 0, count: 512 - remainder)) }
    }

    /// The first value ustar's 12-byte numeric fields (size, time: 11 octal digits) cannot hold: 8^11.
    static var octalLimit: UInt64 { 1 << 33 }
    /// The first value its 8-byte id fields (7 octal digits) cannot hold: 8^7.
    static var idLimit: UInt64 { 1 << 21 }

    /// Whether `bytes` fit a ustar field of `width` as they are: printable ASCII, short enough.
    static func fitsUstar(_ bytes: [UInt8], _ width: Int) -> Bool {
        bytes.count <= width && bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7f }
    }

    /// `LEN key=value\n`, where LEN counts the whole record, itself included.
    static func paxRecord(_ key: String, _ value: [UInt8]) -> [UInt8] {
        let rest = 1 + key.utf8.count + 1 + value.count + 1
        var length = rest + 1
        while String(length).count + rest > length { length += 1 }
        return Array("\(length) \(key)=".utf8) + value + [UInt8(ascii: "\n")]
    }

    /// One 512-byte ustar header block; every number must fit its field (the caller puts what does
    /// not in pax records).
    static func block(
        name: [UInt8],
        mode: UInt32,
        uid: UInt32,
        gid: UInt32,
        size: UInt64,
        modified: Int64,
        type: UInt8,
        link: [UInt8]
    ) -> [UInt8] {
        var block = [UInt8](repeating: 0, count: 512)
        func put(_ bytes: [UInt8], at offset: Int, width: Int) {
            for (index, byte) in bytes.prefix(width).enumerated() { block[offset + index] = byte }
        }
        func octal(_ value: UInt64, at offset: Int, width: Int) {
            let digits = String(value, radix: 8)
            put(
                Array((String(repeating: "0", count: max(0, width - 1 - digits.count)) + digits).utf8),
                at: offset,
                width: width - 1
            )
        }
        put(name, at: 0, width: 100)
        octal(UInt64(mode), at: 100, width: 8)
        octal(UInt64(uid), at: 108, width: 8)
        octal(UInt64(gid), at: 116, width: 8)
        octal(size, at: 124, width: 12)
        octal(UInt64(modified), at: 136, width: 12)
        block[156] = type
        put(link, at: 157, width: 100)
        put(Array("ustar".utf8) + [0], at: 257, width: 6)
        put(Array("00".utf8), at: 263, width: 2)
        // The checksum: every byte summed with the checksum field read as eight spaces.
        put([UInt8](repeating: UInt8(ascii: " "), count: 8), at: 148, width: 8)
        let sum = block.reduce(0) { $0 + UInt64($1) }
        octal(sum, at: 148, width: 7)
        block[154] = 0
        block[155] = UInt8(ascii: " ")
        return block
    }
}
