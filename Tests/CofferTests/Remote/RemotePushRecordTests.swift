import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// The record a vault keeps of its pushes (meta `remote-pushed`): what it stores is what it reads back,
/// and a head kept from an older record, whose bundle's salt is not known, stays not known.
@Suite("Push records: stored and read back, salts known or not")
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
            salt: SecureRandom.bytes(count: BundleHeader.saltSize)
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
    }
}
