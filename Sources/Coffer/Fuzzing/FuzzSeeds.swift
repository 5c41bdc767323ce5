import Foundation

extension FuzzEntryPoints {
    /// Small valid inputs for each target, from which the fuzzer starts (`coffer-fuzz --write-seeds
    /// DIR` writes them; `Tests/Fuzz/corpus` holds them). Valid inputs take the fuzzer past the
    /// checks that random bytes never pass: magic numbers, lengths, the STREAM layer's tags.
    package static func seeds() throws -> [String: [[UInt8]]] {
        let version = VersionEntry(
            version: RecordVersion(stamp: 1 << 20, device: [UInt8](repeating: 3, count: 16)),
            isDeleted: false
        )
        let frames: [BundleFrame] = [
            .chunk(id: ChunkID([UInt8](repeating: 1, count: 32)), record: [UInt8](repeating: 2, count: 48)),
            .record(
                .item,
                id: [UInt8](repeating: 4, count: 32),
                entry: version,
                stored: [UInt8](repeating: 5, count: 40)
            ),
            .record(
                .blob,
                id: [UInt8](repeating: 6, count: 32),
                entry: VersionEntry(version: version.version, isDeleted: true),
                stored: []
            ),
            .end(chunks: 1, records: 2),
        ]
        let plaintext = frames.flatMap(\.encoded)

        let header = BundleHeader.fresh(
            syncGroupID: UUID(),
            deviceID: UUID(),
            firstSequence: 1,
            lastSequence: 3,
            segmentSize: BundleHeader.segmentSizes.lowerBound
        )
        var writer = try BundleStreamWriter(
            header: header,
            key: try header.streamKey(syncRoot: syncRoot),
            sink: DataSink()
        )
        try plaintext.withUnsafeBytes { try writer.write($0) }
        let bundle = [UInt8](try writer.finish().data)

        var item = BinaryWriter()
        item.write(Int64(1_700_000_000_000))
        item.write(Int64(1_700_000_000_000))
        item.write(UInt16(0))
        item.write(UInt32(6))
        item.write(raw: Array("secret".utf8))

        var manifest = BinaryWriter()
        manifest.write(lengthPrefixed: Array("photo.raw".utf8))
        manifest.write(UInt64(0))
        manifest.write(raw: [UInt8](repeating: 0, count: 32))
        manifest.write(Int64(1))
        manifest.write(Int64(2))
        manifest.write(UInt64(0))
        ChunkList.inline([]).encode(into: &manifest)

        var snapshot = BinaryWriter()
        for text in ["docs", "/home/ann/docs", "laptop"] { snapshot.write(lengthPrefixed: Array(text.utf8)) }
        snapshot.write(Int64(3))
        for value in 0..<9 { snapshot.write(UInt64(value)) }
        snapshot.write(UInt64(0))
        snapshot.write(raw: [UInt8](repeating: 0, count: 32))
        snapshot.write(UInt64(0))
        ChunkList.inline([]).encode(into: &snapshot)
        snapshot.write(UInt16(1))
        snapshot.write(lengthPrefixed: Array("daily".utf8))
        snapshot.write(UInt16(1))
        snapshot.write(lengthPrefixed: Array("/home/ann/docs".utf8))

        var rncryptor = try RNCryptor.EncryptingSink(base: DataSink(), password: Array("fuzz".utf8))
        try Array("hello, fuzzer".utf8).withUnsafeBytes { try rncryptor.write($0) }
        try rncryptor.finish()

        return [
            "bundle": [bundle],
            "frames": [plaintext],
            "records": [
                [0] + item.bytes, [1] + manifest.bytes, [2] + snapshot.bytes, [4] + version.encoded,
                [5] + ChunkStore.References(count: 2, born: 7).encoded,
            ],
            "rncryptor": [[UInt8](rncryptor.base.data)],
        ]
    }
}
