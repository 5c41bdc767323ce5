import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// The record a vault keeps of its pushes (meta `remote-pushed`): what it stores is what it reads back,
/// a head kept from an older record, whose bundle's salt is not known, stays not known, and a head's
/// lineage is signed with it.
@Suite("Push records and head lineages: stored and read back, salts known or not")
struct RemotePushRecordTests {
    @Test("a record round-trips; a head without a salt reads back without one, so its bundle is not checked")
    func roundTrip() throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        defer { vault.close() }
        let salted = RemotePushRecord.Head(
            sentThrough: 7,
            latest: RemoteLayout.BundleName(first: 5, last: 7),
            push: SecureRandom.bytes(count: 16).hexEncoded,
            salt: SecureRandom.bytes(count: BundleHeader.saltSize),
            lineage: [
                RemoteHead.Ancestor(push: SecureRandom.bytes(count: 16).hexEncoded, sentThrough: 4),
                RemoteHead.Ancestor(push: SecureRandom.bytes(count: 16).hexEncoded, sentThrough: 2),
            ]
        )
        let unsalted = RemotePushRecord.Head(
            sentThrough: 4,
            latest: RemoteLayout.BundleName(first: 1, last: 4),
            push: SecureRandom.bytes(count: 16).hexEncoded
        )
        let record = RemotePushRecord(device: vault.deviceID, pushed: unsalted, writing: salted)
        let schema = vault.schema
        try vault.environment.write { txn in try record.store(remote: "r", in: txn, schema: schema) }
        let loaded = try vault.environment.read { txn in
            try RemotePushRecord.load(device: vault.deviceID, remote: "r", in: txn, schema: schema)
        }
        #expect(loaded == record)
        #expect(loaded?.pushed?.salt.isEmpty == true)
        #expect(loaded?.lineage.map(\.sentThrough) == [7, 4, 2, 4])
    }

    @Test("a version-2 record (no lineage) reads back with an empty lineage")
    func versionTwo() throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        defer { vault.close() }
        let push = SecureRandom.bytes(count: 16)
        let salt = SecureRandom.bytes(count: BundleHeader.saltSize)
        var writer = BinaryWriter()
        writer.write(UInt8(2))
        writer.write(raw: vault.deviceID.bytes)
        writer.write(UInt8(1))
        for value: UInt64 in [9, 8, 9] { writer.write(value) }
        writer.write(raw: push)
        writer.write(raw: salt)
        let schema = vault.schema
        try vault.environment.write { txn in
            _ = try txn.put(schema.meta, key: RemotePushRecord.metaKey("r"), value: writer.bytes)
        }
        let loaded = try vault.environment.read { txn in
            try RemotePushRecord.load(device: vault.deviceID, remote: "r", in: txn, schema: schema)
        }
        let head = RemotePushRecord.Head(
            sentThrough: 9,
            latest: RemoteLayout.BundleName(first: 8, last: 9),
            push: push.hexEncoded,
            salt: salt
        )
        #expect(loaded == RemotePushRecord(device: vault.deviceID, pushed: head))
        #expect(loaded?.lineage == [RemoteHead.Ancestor(push: push.hexEncoded, sentThrough: 9)])
    }

    @Test("a head's lineage is signed with it, reads back in order, and keeps the newest 64")
    func headLineage() throws {
        let device = UUID()
        let signer = Ed25519PrivateKey()
        let root = SecureBytes.random(count: 32)
        let long = (0..<70).map {
            RemoteHead.Ancestor(push: SecureRandom.bytes(count: 16).hexEncoded, sentThrough: UInt64(70 - $0))
        }
        let name = RemoteLayout.BundleName(first: 71, last: 72)
        for lineage in [[], Array(long.prefix(3)), long] {
            let head = RemoteHead(device: device, sentThrough: 72, latest: name, lineage: lineage)
            let bytes = try head.encoded(epoch: .original, root: root, signer: signer)
            let read = try RemoteHead(
                decoding: bytes,
                key: "head",
                expectedDevice: device,
                syncRoot: root,
                signingKey: try signer.publicKey()
            )
            #expect(read == head)
            #expect(read.lineage == Array(lineage.prefix(RemoteHead.lineageLimit)))
            // The lineage is under the signature: another one in its place does not read.
            guard let first = lineage.first else { continue }
            let altered = String(decoding: bytes, as: UTF8.self).replacingOccurrences(
                of: "\(first.push):\(first.sentThrough)",
                with: "\(first.push):\(first.sentThrough + 1)"
            )
            #expect(throws: CofferError.self) {
                try RemoteHead(
                    decoding: Array(altered.utf8),
                    key: "head",
                    expectedDevice: device,
                    syncRoot: root,
                    signingKey: try signer.publicKey()
                )
            }
        }
    }
}
