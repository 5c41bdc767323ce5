import CofferTestSupport
import Foundation
import Synchronization
import Testing

@testable import Coffer

/// A prefix of its own in the tests' bucket on the shared SeaweedFS server, and remotes pointing
/// there. (One bucket for all: SeaweedFS gives each bucket its own volumes.)
struct RemoteFixture {
    static let bucket = "coffer-tests"
    let server: SeaweedFS
    let prefix: String

    /// A prefix on the shared SeaweedFS, or on moto's server when `server` is "moto" (the tests that
    /// matter run on both S3 implementations).
    init(server name: String = "seaweedfs") throws {
        server = name == "moto" ? try SeaweedFS.moto() : try SeaweedFS.shared()
        prefix = "t-" + UUID().uuidString.lowercased()
        try remote().createBucketIfMissing()
    }

    func remote(secret: String? = nil, partSize: Int? = nil) throws -> S3Remote {
        var remote = S3Remote(
            try S3Location(bucket: Self.bucket, prefix: prefix + "/sync"),
            credentials: try S3Credentials(
                accessKeyID: server.accessKeyID,
                secretAccessKey: secret ?? server.secretAccessKey
            ),
            endpoint: server.endpoint,
            region: "us-east-1"
        )
        if let partSize { remote.partSize = partSize }
        return remote
    }

    func client(partSize: Int? = nil) throws -> S3Client { S3Client(try remote(partSize: partSize)) }

    /// A new vault that joins `group` from this remote.
    func join(
        _ group: SyncGroupFixture,
        name: String,
        content: JoinedContent = .whole
    ) throws -> (Vault, PullSummary) {
        try Vault.join(
            remote: try remote(),
            at: group.directory.path(name),
            passphrase: SyncGroupFixture.passphrase,
            configuration: group.fixture.configuration,
            content: content
        )
    }

    /// A new vault that asks to join, approved by `member`, who pushes: the new vault's first pull
    /// completes the join (the caller makes it).
    func approvedJoin(_ group: SyncGroupFixture, name: String, by member: Vault) throws -> Vault {
        let (vault, request) = try Vault.requestJoin(
            at: group.directory.path(name),
            passphrase: SyncGroupFixture.passphrase,
            configuration: group.fixture.configuration
        )
        try member.approve(request)
        try member.push(to: try remote())
        return vault
    }

    /// The group's first vault, pushed here, and a second vault joined from here.
    func firstPushedAndJoined(_ group: SyncGroupFixture) throws -> (Vault, Vault) {
        let first = try group.createFirst()
        try first.push(to: try remote())
        return (first, try join(group, name: "second").0)
    }
}

@Suite("S3 client and remote sync against a real SeaweedFS")
struct RemoteSyncTests {
    @Test("The revoked copy through the object store: told it was revoked, its pushes left alone, the rest converge")
    func revokedCopyThroughRemote() throws {
        let fixture = try RemoteFixture()
        let group = try SyncGroupFixture()
        let (a, b) = try fixture.firstPushedAndJoined(group)
        let remote = try fixture.remote()
        try b.push(to: remote)
        try a.pull(from: remote)
        let c = try fixture.approvedJoin(group, name: "c", by: a)
        try c.pull(from: remote)
        #expect(c.syncGroupID == a.syncGroupID)
        try c.push(to: remote)
        try b.pull(from: remote)
        c.close()
        let copyDirectory = group.directory.path("c-copy")
        try FileManager.default.copyItem(at: group.directory.path("c"), to: copyDirectory)

        try a.revoke(device: c.deviceID)
        try a.keychain.setPassword("after", service: "after", account: "ann", scope: .syncable)
        try a.push(to: remote)
        try b.pull(from: remote)
        #expect(try b.keychain.password(service: "after", account: "ann") == "after")
        try b.keychain.setPassword("after-b", service: "after-b", account: "ann", scope: .syncable)
        try b.push(to: remote)
        try a.pull(from: remote)
        #expect(try a.syncableState() == b.syncableState())

        let copy = try Vault.open(at: copyDirectory, configuration: group.fixture.configuration)
        try copy.unlock(passphrase: SyncGroupFixture.passphrase)
        // The copy, not yet told, writes and pushes: members leave its objects alone (below).
        try copy.keychain.setPassword("forged", service: "after", account: "ann", scope: .syncable)
        try copy.push(to: remote)
        let before = try copy.dumpTables()
        let told = #expect(throws: CofferError.self) { try copy.pull(from: remote) }
        #expect(told?.message.contains("this device was revoked") == true, "\(told?.message ?? "")")
        // It takes no record; it keeps the membership log that says it was revoked.
        let after = try copy.dumpTables()
        for table in before.keys where table != "meta" { #expect(after[table] == before[table], "\(table)") }
        #expect(try copy.keychain.password(service: "after", account: "ann") == "forged")
        // Told, it pushes nothing more.
        let refused = #expect(throws: CofferError.self) { try copy.push(to: remote) }
        #expect(refused?.message.contains("pushes nothing") == true, "\(refused?.message ?? "")")
        let pulled = try a.pull(from: remote)
        #expect(pulled.revokedDevices == [c.deviceID])
        #expect(try a.keychain.password(service: "after", account: "ann") == "after")
        try b.pull(from: remote)
        #expect(try a.syncableState() == b.syncableState())
    }

    @Test("Objects go up and come back: single and multipart uploads, ranges, listings, deletes")
    func clientRoundTrips() throws {
        let fixture = try RemoteFixture()
        let client = try fixture.client(partSize: 5 << 20)
        let base = fixture.prefix
        try client.put("\(base)/a/small", body: Array("hello".utf8))
        #expect(try client.get("\(base)/a/small") == Array("hello".utf8))
        #expect(try client.getPrefix("\(base)/a/small", count: 2) == Array("he".utf8))
        #expect(try client.get("\(base)/a/missing") == nil)
        #expect(try client.size(of: "\(base)/a/missing") == nil)

        let directory = try TemporaryDirectory()
        let big = directory.path("big")
        let content = Content.mixed(12 << 20, seed: 7)
        try Data(content).write(to: big)
        let reported = Mutex<Int64>(0)
        try client.upload(file: big.path, to: "\(base)/a/big", progress: { sent in reported.withLock { $0 = sent } })
        #expect(reported.withLock { $0 } == Int64(content.count))
        #expect(try client.size(of: "\(base)/a/big") == Int64(content.count))
        let back = directory.path("back")
        try client.download("\(base)/a/big", to: back.path)
        #expect(try Data(contentsOf: back) == Data(content))

        for index in 0..<5 { try client.put("\(base)/list/\(index)", body: [UInt8(index)]) }
        #expect(try client.list(prefix: "\(base)/list/").map(\.key) == (0..<5).map { "\(base)/list/\($0)" })
        try client.delete("\(base)/list/3")
        try client.delete("\(base)/list/3")
        #expect(try client.list(prefix: "\(base)/list/").count == 4)
    }

    @Test("Wrong credentials, a missing bucket and an unreachable store give errors that say what to do")
    func clearErrors() throws {
        let fixture = try RemoteFixture()
        let wrong = S3Client(try fixture.remote(secret: "not-the-secret"))
        let refused = #expect(throws: CofferError.self) { try wrong.put("x", body: [1]) }
        #expect(refused?.code == .authFailed)
        #expect(refused?.message.contains("AWS_SECRET_ACCESS_KEY") == true)

        var missing = try fixture.remote()
        missing.location = try S3Location(bucket: "no-such-bucket-\(UUID().uuidString.lowercased().prefix(8))")
        let noBucket = #expect(throws: CofferError.self) { try S3Client(missing).put("x", body: [1]) }
        #expect(noBucket?.code == .param)
        #expect(noBucket?.message.contains("does not exist") == true)

        var unreachable = try fixture.remote()
        unreachable.endpoint = URL(string: "http://127.0.0.1:1")!
        let down = #expect(throws: CofferError.self) { try S3Client(unreachable).get("x") }
        #expect(down?.code == .io)
        #expect(down?.message.contains("after 5 tries") == true)
    }

    @Test(
        "Three vaults push and pull in a random order and converge; a newcomer gets it all; device-bound records stay home",
        arguments: ModelSeeds.seeds("COFFER_REMOTE_MODEL_SEEDS", defaults: [42, 7, 2026])
    )
    func threeVaultsConverge(seed: UInt64) throws {
        let replay: Comment = "replay with COFFER_REMOTE_MODEL_SEEDS=\(seed),\(seed)"
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let first = try group.createFirst()
        try first.keychain.setPassword("never leaves", service: "local", account: "a", scope: .deviceBound)
        try first.push(to: remote)
        var vaults = [first]
        for name in ["v1", "v2"] {
            let (vault, summary) = try fixture.join(group, name: name)
            #expect(summary.devices == 1, replay)
            vaults.append(vault)
        }
        var generator = SplitMix64(seed: seed)
        for step in 0..<40 {
            let vault = vaults[Int(generator.next() % 3)]
            switch generator.next() % 6 {
            case 0, 1:
                try vault.keychain.setPassword(
                    "value-\(step)",
                    service: "service-\(generator.next() % 4)",
                    account: "ann",
                    accessibility: .afterFirstUnlock,
                    scope: .syncable
                )
            case 2:
                _ = try vault.keychain.deletePassword(service: "service-\(generator.next() % 4)", account: "ann")
            case 3:
                let key = generator.next() % 3
                try vault.blobs.write(
                    "blob-\(key)",
                    data: Content.mixed(Int(generator.next() % 40_000), seed: UInt64(step))
                )
            case 4: try vault.push(to: remote)
            default: try vault.pull(from: remote)
            }
        }
        // What a device pulled it does not push back: a second round applies nothing.
        for vault in vaults { try vault.push(to: remote) }
        for vault in vaults { try vault.pull(from: remote) }
        for vault in vaults { try vault.push(to: remote) }
        for vault in vaults { #expect(try vault.pull(from: remote).applied.total == 0, replay) }
        for vault in vaults { try vault.push(to: remote) }
        for vault in vaults { #expect(try vault.pull(from: remote).applied.total == 0, replay) }
        let state = try vaults[0].syncableState()
        #expect(!state.isEmpty, replay)
        for vault in vaults.dropFirst() {
            #expect(try vault.syncableState() == state, replay)
            #expect(try vault.keychain.password(service: "local", account: "a") == nil, replay)
        }
        #expect(try first.keychain.password(service: "local", account: "a") == "never leaves", replay)
        // Now nothing is left to move.
        for vault in vaults {
            let quiet = try vault.push(to: remote)
            #expect(quiet.object == nil, "\(replay): \(quiet.export)")
            #expect(try vault.pull(from: remote).bundles.isEmpty, replay)
        }
        // Every device's own changes are in the store once, so a newcomer converges from it alone.
        let (newcomer, _) = try fixture.join(group, name: "newcomer")
        #expect(try newcomer.syncableState() == state, replay)
    }

    /// The bytes of every object under the fixture's prefix, by device folder.
    /// `count` bytes from `generator`: incompressible, and the same for a seed every run.
    static func content(_ count: Int, _ generator: inout SplitMix64) -> Data {
        Data((0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
    }

    /// A group whose first vault holds the blob `name` of `megabytes` MiB from `seed`'s bytes.
    static func firstWithBlob(
        _ name: String,
        megabytes: Int,
        seed: UInt64
    ) throws -> (group: SyncGroupFixture, vault: Vault, content: Data, generator: SplitMix64) {
        let group = try SyncGroupFixture()
        let vault = try group.createFirst()
        var generator = SplitMix64(seed: seed)
        let content = Self.content(megabytes << 20, &generator)
        try vault.blobs.write(name, data: content)
        return (group, vault, content, generator)
    }

    static func storedBytes(_ fixture: RemoteFixture) throws -> [String: Int64] {
        var bytes: [String: Int64] = [:]
        for object in try fixture.client().list(prefix: fixture.prefix + "/") {
            let folder = object.key.split(separator: "/").dropLast().last.map(String.init) ?? ""
            bytes[folder, default: 0] += object.size
        }
        return bytes
    }

    @Test(
        "Each record reaches the store once: what a device pulled from a store it does not push back",
        arguments: ["seaweedfs", "moto"]
    )
    func onceInTheStore(server: String) throws {
        let fixture = try RemoteFixture(server: server)
        let remote = try fixture.remote()
        let (group, a, content, _) = try Self.firstWithBlob("photos.bin", megabytes: 3, seed: 11)
        for index in 0..<50 { try a.keychain.add(Items.password("service-\(index)", "ann", scope: .syncable)) }
        try a.push(to: remote)
        let (b, _) = try fixture.join(group, name: "b")
        let (c, _) = try fixture.join(group, name: "c")
        let bPush = try b.push(to: remote)
        let cPush = try c.push(to: remote)
        #expect(bPush.export.alreadyInStore == 51 && bPush.export.records.total == 0, "\(bPush.export)")
        #expect(cPush.export.alreadyInStore == 51 && cPush.export.chunks == 0, "\(cPush.export)")
        let stored = try Self.storedBytes(fixture)
        let total = stored.values.reduce(0, +)
        let first = stored[a.deviceID.uuidString.lowercased()] ?? 0
        #expect(Double(total) <= 1.05 * Double(first), "one copy: \(stored)")

        // Changes still travel: each device's own edits go up once and reach everyone.
        try b.keychain.setPassword("from b", service: "service-1", account: "ann", scope: .syncable)
        try c.blobs.write("notes.txt", data: Data("from c".utf8))
        try b.push(to: remote)
        try c.push(to: remote)
        for vault in [a, b, c] { try vault.pull(from: remote) }
        for vault in [a, b, c] {
            let again = try vault.push(to: remote)
            #expect(again.export.records.total == 0, "nothing pulled goes back: \(again.export)")
        }
        let state = try a.syncableState()
        #expect(try b.syncableState() == state && c.syncableState() == state)
        // A newcomer gets everything from the store, though no device relayed another's records.
        let (d, _) = try fixture.join(group, name: "d")
        #expect(try d.syncableState() == state)
        #expect(try d.keychain.password(service: "service-1", account: "ann") == "from b")
        #expect(try d.blobs.data("photos.bin") == content)
    }

    @Test(
        "A push larger than a part streams up in parts with no temporary file; a pull imports it as it downloads",
        arguments: ["seaweedfs", "moto"]
    )
    func streamingPushAndPull(server: String) throws {
        let fixture = try RemoteFixture(server: server)
        let remote = try fixture.remote(partSize: 5 << 20)
        let (group, a, content, _) = try Self.firstWithBlob("large.bin", megabytes: 13, seed: 31)
        let temporary = FileManager.default.temporaryDirectory
        let before = Set((try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? [])
        let progress = Mutex<[Int64]>([])
        let pushed = try a.push(to: remote) { sent in progress.withLock { $0.append(sent) } }
        let reported = progress.withLock { $0 }
        #expect(pushed.export.bytes > 13 << 20)
        #expect(reported.count >= 3 && reported.last == pushed.export.bytes, "parts reported as they went: \(reported)")
        let after = Set((try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? [])
        #expect(after.subtracting(before).filter { $0.hasPrefix("coffer-push") }.isEmpty)
        let object = try #require(pushed.object)
        #expect(try fixture.client().size(of: object) == pushed.export.bytes)
        let (b, pulled) = try fixture.join(group, name: "b")
        #expect(pulled.bytes == pushed.export.bytes)
        #expect(try b.blobs.data("large.bin") == content)
    }

    @Test(
        "A push stopped after some parts resumes with them when nothing changed, and starts afresh when something did",
        arguments: ["seaweedfs", "moto"]
    )
    func resumedPush(server: String) throws {
        let fixture = try RemoteFixture(server: server)
        let remote = try fixture.remote(partSize: 5 << 20)
        let (group, a, content, rest) = try Self.firstWithBlob("large.bin", megabytes: 17, seed: 41)
        var generator = rest
        func stopAfterTwoParts() -> (Int) throws(CofferError) -> Void {
            { number throws(CofferError) in
                if number == 2 { throw CofferError(.io, "the network went away") }
            }
        }
        let stopped = #expect(throws: CofferError.self) {
            try a.push(to: remote, progress: nil, beforeHead: {}, afterPart: stopAfterTwoParts())
        }
        #expect(stopped?.message == "the network went away")
        // Nothing changed: the next push keeps the two parts sent.
        let resumed = try a.push(to: remote)
        #expect(resumed.resumedParts == 2, "\(resumed)")
        let (b, _) = try fixture.join(group, name: "b")
        #expect(try b.blobs.data("large.bin") == content)

        // Stopped again, then the vault changes: the old upload is abandoned, the push starts afresh.
        let more = Self.content(12 << 20, &generator)
        try a.blobs.write("more.bin", data: more)
        _ = try? a.push(to: remote, progress: nil, beforeHead: {}, afterPart: stopAfterTwoParts())
        try a.keychain.setPassword("changed", service: "mail", account: "ann", scope: .syncable)
        let afresh = try a.push(to: remote)
        #expect(afresh.resumedParts == 0)
        try b.pull(from: remote)
        #expect(try b.blobs.data("more.bin") == more)
        #expect(try b.keychain.password(service: "mail", account: "ann") == "changed")
        #expect(try b.syncableState() == a.syncableState())
    }

    @Test("Records pulled from a device revoked since are pushed again, so a newcomer still gets them")
    func revokedSourceResent() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let a = try group.createFirst()
        try a.push(to: remote)
        let (b, _) = try fixture.join(group, name: "b")
        try b.push(to: remote)
        try a.pull(from: remote)
        // b's record reaches a through the store; a does not push it back.
        try b.keychain.add(Items.password("written-by-b", "ann", value: "kept", scope: .syncable))
        try b.push(to: remote)
        try a.pull(from: remote)
        #expect(try a.push(to: remote).export.alreadyInStore >= 1)
        // b is revoked: its bundles are refused from now on, so a sends its records again.
        try a.revoke(device: b.deviceID)
        let resent = try a.push(to: remote)
        #expect(resent.export.resentFromRevoked == 1, "\(resent.export)")
        #expect(try a.push(to: remote).object == nil, "sent once")
        let c = try fixture.approvedJoin(group, name: "c", by: a)
        let pulled = try c.pull(from: remote)
        #expect(pulled.revokedDevices == [b.deviceID])
        #expect(try c.keychain.password(service: "written-by-b", account: "ann") == "kept")
        #expect(try c.syncableState() == a.syncableState())
    }

    @Test(
        "A revoked device's later objects are refused by a member that learns of the revocation in the same pull, whatever order it takes the devices in (red team round 18)"
    )
    func revocationLearnedInTheSamePull() throws {
        let fixture = try RemoteFixture()
        let group = try SyncGroupFixture()
        let remote = try fixture.remote()
        let first = try group.createFirst()
        try first.push(to: remote)
        var vaults = [first]
        for name in ["second", "third"] { vaults.append(try fixture.join(group, name: name).0) }
        for vault in vaults { try vault.push(to: remote) }
        for vault in vaults { try vault.pull(from: remote) }
        // The pull takes devices in the order of their ids: the revoked one comes first.
        vaults.sort { $0.deviceID.uuidString < $1.deviceID.uuidString }
        let (revoked, observer, revoker) = (vaults[0], vaults[1], vaults[2])
        try revoker.keychain.setPassword("genuine", service: "bank", account: "ann", scope: .syncable)
        try revoker.push(to: remote)
        try observer.pull(from: remote)
        try revoked.pull(from: remote)
        try revoker.revoke(device: revoked.deviceID)
        try revoker.push(to: remote)
        // Not told yet, the revoked device overwrites the item and pushes.
        try revoked.keychain.setPassword("hijacked", service: "bank", account: "ann", scope: .syncable)
        try revoked.push(to: remote)
        try observer.pull(from: remote)
        #expect(try observer.members().first { $0.deviceID == revoked.deviceID }?.isActive == false)
        #expect(try observer.keychain.password(service: "bank", account: "ann") == "genuine")
        try observer.push(to: remote)
        try revoker.pull(from: remote)
        #expect(try revoker.keychain.password(service: "bank", account: "ann") == "genuine")
    }

    @Test("A device told its join no longer counts pushes nothing, and says why (red team round 17, F3)")
    func voidJoinPushesNothing() throws {
        let fixture = try RemoteFixture()
        let group = try SyncGroupFixture()
        let remote = try fixture.remote()
        let a = try group.createFirst()
        try a.keychain.setPassword("a1", service: "a1", account: "ann", scope: .syncable)
        try a.push(to: remote)
        let (b, _) = try fixture.join(group, name: "b")
        // a rekeys before it hears of b's join, which closes passphrase joins at the same time.
        try a.rekey(passphrase: SyncGroupFixture.passphrase)
        try a.push(to: remote)
        let told = #expect(throws: CofferError.self) { try b.pull(from: remote) }
        #expect(told?.message.contains("join no longer counts") == true, "\(told?.message ?? "")")
        try b.keychain.setPassword("b1", service: "b1", account: "ann", scope: .syncable)
        let client = try fixture.client()
        let before = try client.list(prefix: fixture.prefix + "/").map(\.key)
        let refused = #expect(throws: CofferError.self) { try b.push(to: remote) }
        #expect(refused?.code == .notTrusted)
        #expect(refused?.message.contains("join no longer counts") == true, "\(refused?.message ?? "")")
        #expect(refused?.message.contains("nothing was written to the store") == true)
        #expect(try client.list(prefix: fixture.prefix + "/").map(\.key) == before)
    }

    @Test(
        "A push stopped before its head moves no cursor: a pull applies its bundle's records at most once, and the next push, which deletes nothing, completes it"
    )
    func interruptedPush() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (first, second) = try fixture.firstPushedAndJoined(group)
        try first.keychain.setPassword("v2", service: "mail", account: "ann", scope: .syncable)
        let killed = #expect(throws: CofferError.self) {
            try first.push(to: remote, progress: nil) { () throws(CofferError) in
                throw CofferError(.io, "killed before the head")
            }
        }
        #expect(killed?.message == "killed before the head")
        let client = try fixture.client()
        #expect(try client.list(prefix: fixture.prefix + "/").filter { $0.key.hasSuffix(".bundle") }.count == 2)
        // Its bundle lies past the head: what it holds is what the next push sends again, and another
        // copy's bundle there may hold what no other object does (docs/FORMAT.md, "Bundles off the
        // chain"). Its records are applied once; the cursor stays.
        let cursors = PulledCursors(schema: second.schema, remote: remote.identity)
        let cursor = try second.environment.read { txn in try cursors.load(in: txn)[first.deviceID] }
        #expect(try second.pull(from: remote).bundles.count == 1)
        #expect(try second.keychain.password(service: "mail", account: "ann") == "v2")
        #expect(try second.environment.read { txn in try cursors.load(in: txn)[first.deviceID] } == cursor)
        let before = try second.dumpTables()
        #expect(try second.pull(from: remote).bundles.isEmpty)
        #expect(try second.dumpTables() == before)

        let retried = try first.push(to: remote)
        #expect(retried.object != nil)
        #expect(
            try client.list(prefix: fixture.prefix + "/").filter { $0.key.hasSuffix(".bundle") }.count == 2,
            "the same changes, written over the unfinished object"
        )
        let completed = try second.pull(from: remote)
        #expect(completed.bundles.count == 1 && completed.applied.items == 0, "\(completed)")
        #expect(try second.keychain.password(service: "mail", account: "ann") == "v2")
        #expect(try second.environment.read { txn in try cursors.load(in: txn)[first.deviceID] } != cursor)
    }

    @Test(
        "A damaged bundle object or a forged head is refused and nothing of it is applied: the pull says so, and that device's changes wait"
    )
    func tamperedObjects() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let (first, second) = try fixture.firstPushedAndJoined(group)
        try first.keychain.setPassword("secret", service: "mail", account: "ann", scope: .syncable)
        let pushed = try #require(try first.push(to: remote).object)
        let client = try fixture.client()
        var bytes = try #require(try client.get(pushed))
        bytes[bytes.count - 20] ^= 0x01
        try client.put(pushed, body: bytes)
        let before = try second.dumpTables()
        let damaged = try second.pull(from: remote)
        #expect(damaged.waitingDevices == [first.deviceID])
        #expect(damaged.isIncomplete)
        #expect(damaged.notices.contains { $0.contains("Stopped at \(pushed)") }, "\(damaged.notices)")
        #expect(try second.dumpTables() == before)

        // A head whose cursor was moved forward (so the pusher would skip changes) is not signed by
        // its device: a pull ignores it and says so, and the pusher goes on from its own record and
        // writes its head again.
        let headKey = RemoteLayout(location: remote.location).headKey(first.deviceID)
        let head = String(decoding: try #require(try client.get(headKey)), as: UTF8.self)
        let forged = head.replacingOccurrences(of: "sent-through ", with: "sent-through 9")
        try client.put(headKey, body: Array(forged.utf8))
        let ignored = try second.pull(from: remote)
        #expect(ignored.notices.contains { $0.contains("not signed by the device it names") })
        try first.keychain.setPassword("later", service: "mail", account: "bob", scope: .syncable)
        let repaired = try first.push(to: remote)
        #expect(repaired.object != nil)
        #expect(repaired.notices.contains { $0.contains("Ignored this device's head") })
        #expect(repaired.export.firstSequence > 1)
    }

    @Test("Joining with a wrong passphrase, or from an empty prefix, fails and leaves nothing behind")
    func joinRefusals() throws {
        let fixture = try RemoteFixture()
        let remote = try fixture.remote()
        let group = try SyncGroupFixture()
        let target = group.directory.path("joined")
        let empty = #expect(throws: CofferError.self) {
            try Vault.join(remote: remote, at: target, passphrase: "pw", configuration: group.fixture.configuration)
        }
        #expect(empty?.code == .param)
        #expect(empty?.message.contains("nothing to join") == true)
        try group.createFirst().push(to: remote)
        let wrong = #expect(throws: CofferError.self) {
            try Vault.join(remote: remote, at: target, passphrase: "wrong", configuration: group.fixture.configuration)
        }
        #expect(wrong?.code == .authFailed)
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }
}
