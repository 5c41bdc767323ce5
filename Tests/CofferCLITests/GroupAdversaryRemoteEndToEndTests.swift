import CofferTestSupport
import Foundation
import Testing

/// Issue 37's trust findings through the stock `coffer` command and an object store (SeaweedFS and
/// moto): a revoked device's owner rejoining from the bucket's old objects with the passphrase, and a
/// thief racing its revoker, with the members only pushing and pulling.
@Suite("Sync group adversaries through the store, end to end")
struct GroupAdversaryRemoteEndToEndTests: StoreEndToEndSuite {
    let cli: CLIHarness
    let remote = "s3://coffer-cli-tests/" + UUID().uuidString.lowercased()

    init() throws { cli = try CLIHarness() }

    @discardableResult
    func run(_ arguments: [String], _ server: SeaweedFS, vault: String? = nil) throws -> Products.Result {
        var environment = server.environment
        if let vault { environment["COFFER_VAULT"] = cli.directory.path(vault).path }
        return try cli.run(arguments, extra: environment)
    }

    func deviceID(_ server: SeaweedFS, vault: String? = nil) throws -> String {
        let result = try run(["device", "show", "--json"], server, vault: vault)
        let shown = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        return try #require(shown["deviceID"] as? String)
    }

    func isActive(_ id: String, _ server: SeaweedFS, vault: String? = nil) throws -> Bool? {
        let result = try run(["devices", "--json"], server, vault: vault)
        let list = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
        return list.first { ($0["deviceID"] as? String)?.lowercased() == id.lowercased() }?["isActive"] as? Bool
    }

    /// Vault A pushes, B joins from the store and pushes, A pulls: both members.
    func pairThroughStore(_ name: String) throws -> SeaweedFS {
        let server = name == "moto" ? try SeaweedFS.moto() : try SeaweedFS.shared()
        try add("before", server)
        #expect(try run(["push", remote, "--create-bucket"], server).status == 0)
        let joined = try run(["init", "--join", remote], server, vault: "b")
        #expect(joined.status == 0, "\(joined.error)")
        #expect(try run(["push", remote], server, vault: "b").status == 0)
        #expect(try run(["pull", remote], server).status == 0)
        return server
    }

    @Test(
        "A revoked device's owner joins a new vault from the bucket's old objects: A, only pulling and pushing, never admits it",
        arguments: ["seaweedfs", "moto"]
    )
    func rejoinFromStore(server name: String) throws {
        let server = try pairThroughStore(name)
        // b's owner keeps a bundle from before the revocation, as an old USB stick would.
        let old = cli.directory.path("old.bundle").path
        #expect(try run(["export", "--out", old], server, vault: "b").status == 0)
        #expect(try run(["device", "revoke", try deviceID(server, vault: "b")], server).status == 0)
        try add("after", server)
        #expect(try run(["push", remote], server).status == 0)
        // Through the store (its old objects still carry a join block) and from the old bundle.
        for (vault, source) in [("b2", remote), ("b3", old)] {
            let made = try run(["init", "--join", source], server, vault: vault)
            guard made.status == 0 else {
                #expect(made.error.contains("approval"), "\(vault): \(made.error)")
                continue
            }
            try add("planted-\(vault)", server, vault: vault)
            _ = try run(["push", remote], server, vault: vault)
            #expect(try run(["pull", remote], server).status <= 3)
            #expect(try !holds("planted-\(vault)", server), "\(vault)'s record was accepted")
            #expect(try isActive(try deviceID(server, vault: vault), server) != true)
            _ = try run(["pull", remote], server, vault: vault)
            #expect(try !holds("after", server, vault: vault), "\(vault) read what was written after")
        }
    }

    @Test(
        "A thief's copy revokes its revoker through the store: both are out, the third member carries on",
        arguments: ["seaweedfs", "moto"]
    )
    func thiefRacesThroughStore(server name: String) throws {
        let server = try pairThroughStore(name)
        let joined = try run(["init", "--join", remote], server, vault: "c")
        #expect(joined.status == 0, "\(joined.error)")
        #expect(try run(["push", remote], server, vault: "c").status == 0)
        for vault in [nil, "b"] as [String?] { #expect(try run(["pull", remote], server, vault: vault).status == 0) }
        let (a, b) = (try deviceID(server), try deviceID(server, vault: "b"))
        #expect(try run(["device", "revoke", b], server).status == 0)
        #expect(try run(["device", "revoke", a], server, vault: "b").status == 0)
        _ = try run(["push", remote], server, vault: "b")
        _ = try run(["push", remote], server)
        let told = try run(["pull", remote], server, vault: "c")
        // Each revoked device is named, with who revoked it (red team round 13, m1).
        #expect(told.error.contains("membership changed"), "\(told.error)")
        for device in [a, b] {
            #expect(told.error.contains("(\(device.prefix(8).lowercased())) was revoked by"), "\(told.error)")
        }
        #expect(try isActive(a, server, vault: "c") == false)
        #expect(try isActive(b, server, vault: "c") == false)
        try add("c-alone", server, vault: "c")
        #expect(try run(["push", remote], server, vault: "c").status == 0)
        let thief = try run(["pull", remote], server, vault: "b")
        #expect(thief.error.contains("this device"), "\(thief.error)")
        #expect(try !holds("c-alone", server, vault: "b"))
    }

    @Test(
        "A newcomer joins through the store after joins were closed: an old checkpoint's join block is not taken, and the message says to ask for approval"
    )
    func joinThroughStoreAfterClosing() throws {
        let server = try pairThroughStore("seaweedfs")
        // A checkpoint made while passphrase joins were open still carries a join block.
        #expect(try run(["remote", "compact", remote], server).status == 0)
        #expect(try run(["group", "set", "--join", "approval"], server).status == 0)
        #expect(try run(["push", remote], server).status == 0)
        let late = try run(["init", "--join", remote], server, vault: "late")
        #expect(late.status == 1, "\(late.output)")
        #expect(late.error.contains("approval only") && late.error.contains("--request-join"), "\(late.error)")
        #expect(
            !FileManager.default.fileExists(atPath: cli.directory.path("late").appendingPathComponent("data.mdb").path)
        )
    }

    @Test("A device whose join does not count pushes: every member's pull ignores it with a notice and goes on")
    func voidedPusherStopsNoPull() throws {
        let server = try pairThroughStore("seaweedfs")
        let old = cli.directory.path("old.bundle").path
        #expect(try cli.run(["export", "--out", old]).status == 0)
        #expect(try run(["group", "set", "--join", "approval"], server).status == 0)
        #expect(try run(["push", remote], server).status == 0)
        // A vault joined from the old bundle, concurrent with the closing: its join never counts.
        let late = ["COFFER_VAULT": cli.directory.path("late").path]
        #expect(try cli.run(["init", "--join", old], extra: late).status == 0)
        try add("from-late", server, vault: "late")
        _ = try run(["push", remote], server, vault: "late")
        try add("after", server, vault: "b")
        #expect(try run(["push", remote], server, vault: "b").status == 0)
        let pulled = try run(["pull", remote], server)
        #expect(pulled.status == 0, "\(pulled.error)")
        #expect((pulled.output + pulled.error).contains("Ignored device"), "\(pulled.output) \(pulled.error)")
        #expect(try holds("after", server))
        #expect(try !holds("from-late", server))
        // A newcomer is turned away for the group's policy alone, not for the ignored objects.
        let joined = try run(["init", "--join", remote], server, vault: "newcomer")
        #expect(joined.status != 0 && joined.error.contains("approval"), "\(joined.error)")
        #expect(!joined.error.contains("not a member"), "\(joined.error)")
    }
}
