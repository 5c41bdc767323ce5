/// The decoders that read untrusted bytes, one entry point each, for the libFuzzer target in
/// `Tests/Fuzz` (`Tools/fuzz`). Each feeds its input to the decoder the way the vault would and must
/// return, whatever the input: never crash, hang or allocate without bound. Errors are the expected
/// outcome and are dropped.
package enum FuzzEntryPoints {
    /// The targets, by name.
    package static let targets: [String: @Sendable ([UInt8]) -> Void] = [
        "bundle": bundle, "frames": frames, "records": records, "rncryptor": rncryptor,
    ]

    /// A fixed sync root, so inputs made with it (the seeds) reach past the STREAM layer.
    package static let syncRoot = SecureBytes(copying: [UInt8](repeating: 0x5A, count: 32))

    /// A bundle file: header, STREAM segments under ``syncRoot``, frames.
    package static func bundle(_ bytes: [UInt8]) {
        var source = DataSource(bytes)
        guard let (header, headerBytes) = try? BundleHeader.read(from: &source),
            let key = try? header.streamKey(syncRoot: syncRoot),
            let reader = try? BundleStreamReader(source: source, header: header, headerBytes: headerBytes, key: key),
            var frames = try? BundleFrameReader(source: reader)
        else { return }
        while (try? frames.next()) != nil {}
        _ = try? JoinBlock(decoding: header.joinBlock)
        if let log = try? GroupLog(group: header.syncGroupID, decoding: header.log) {
            _ = try? log.state(roots: { _ in nil })
        }
    }

    /// A bundle's plaintext: frames and the records inside them, as an import reads them.
    package static func frames(_ bytes: [UInt8]) {
        guard var frames = try? BundleFrameReader(source: DataSource(bytes)) else { return }
        while (try? frames.next()) != nil {}
    }

    /// A stored record's plaintext, the first byte choosing which: an item, a blob manifest, a
    /// snapshot record, a snapshot tree entry, a version entry, chunk references, a join block, a KDF
    /// record.
    package static func records(_ bytes: [UInt8]) {
        guard let selector = bytes.first else { return }
        let body = Array(bytes.dropFirst())
        switch selector % 8 {
        case 0:
            let header = ItemRecord.Header(
                itemClass: .genericPassword,
                scope: .syncable,
                accessibility: .whenUnlocked,
                requiresUserPresence: false,
                epoch: .original
            )
            _ = try? ItemRecord.parse(body, header: header)
        case 1: _ = try? BlobManifest.parse(body, scope: .syncable, level: .whenUnlocked)
        case 2:
            _ = try? SnapshotRecord.parse(
                body,
                id: [UInt8](repeating: 0, count: 16),
                version: SnapshotRecord.version,
                scope: .syncable,
                level: .afterFirstUnlock
            )
        case 3:
            for version in SnapshotRecord.readableVersions { _ = try? TreeEntry.decode(body, version: version) }
        case 4: _ = try? VersionEntry(decoding: body)
        case 5: _ = body.withUnsafeBytes { try? ChunkStore.References(decoding: $0) }
        case 6: _ = try? JoinBlock(decoding: body)
        default: _ = try? KDFRecord(decoding: body)
        }
    }

    /// An RNCryptor v3 file, read to its end with the password `fuzz`.
    package static func rncryptor(_ bytes: [UInt8]) {
        var source = RNCryptor.DecryptingSource(base: DataSource(bytes), password: Array("fuzz".utf8))
        while let piece = try? source.read(upTo: 64 << 10), !piece.isEmpty {}
    }
}
