import CofferTestSupport
import Foundation
import Testing

/// Issue 37's trust findings through the stock `coffer` command, by bundle files: a revoked device's
/// owner who knows the passphrase, a thief racing its revoker, a leaked copy after rekey and rotate.
@Suite("Sync group adversaries through the coffer command")
struct GroupAdversaryEndToEndTests {
    let cli: CLIHarness

    init() throws { cli = try CLIHarness() }

    func vault(_ name: String, passphrase: String = "pw") -> [String: String] {
        ["COFFER_VAULT": cli.directory.path(name).path, "COFFER_PASSPHRASE": passphrase]
    }

    func bundle(_ name: String) -> String { cli.directory.path(name + ".bundle").path }

    /// Exports from `from` (nil: the harness's vault) and imports into `to`.
    @discardableResult
    func exchange(from: [String: String]?, to: [String: String]?, _ name: String) throws -> Products.Result {
        let path = bundle(name)
        let exported = try cli.run(["export", "--out", path], extra: from ?? [:])
        #expect(exported.status == 0, "\(exported.error)")
        return try cli.run(["import", path], extra: to ?? [:])
    }

    func addItem(_ service: String, in vault: [String: String]? = nil) throws {
        let added = try cli.run(
            ["item", "add", "--service", service, "--account", "ann", "--value", service, "--sync"],
            extra: vault ?? [:]
        )
        #expect(added.status == 0, "\(added.error)")
    }

    func has(_ service: String, in vault: [String: String]? = nil) throws -> Bool {
        try cli.run(["item", "get", "--service", service, "--account", "ann"], extra: vault ?? [:]).status == 0
    }

    func deviceID(_ vault: [String: String]) throws -> String {
        let result = try cli.run(["devices", "--json"], extra: vault)
        let list = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
        return try #require(list.first { $0["isThisDevice"] as? Bool == true }?["deviceID"] as? String)
    }

    func isActive(_ id: String, in vault: [String: String]? = nil) throws -> Bool? {
        let result = try cli.run(["devices", "--json"], extra: vault ?? [:])
        let list = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
        return list.first { $0["deviceID"] as? String == id }?["isActive"] as? Bool
    }

    /// The harness's vault "a" with an item, and "b" joined by passphrase and known to a; returns the
    /// bundle b joined from.
    func pair() throws -> String {
        try addItem("before")
        let start = bundle("start")
        #expect(try cli.run(["export", "--out", start]).status == 0)
        #expect(try cli.run(["init", "--join", start], extra: vault("b")).status == 0)
        #expect(try exchange(from: vault("b"), to: nil, "b-to-a").status == 0)
        return start
    }

    @Test("A revoked device's owner makes a new vault from an old bundle with the passphrase: never admitted")
    func rejoinFromOldBundle() throws {
        let start = try pair()
        // b's owner also keeps a bundle the revoked vault makes of itself.
        #expect(try cli.run(["export", "--out", bundle("b-own")], extra: vault("b")).status == 0)
        let bID = try deviceID(vault("b"))
        #expect(try cli.run(["device", "revoke", bID]).status == 0)
        try addItem("after")
        for (name, source) in [("b2", start), ("b3", bundle("b-own"))] {
            let made = try cli.run(["init", "--join", source, "--name", name], extra: vault(name))
            #expect(made.status == 0, "\(made.error)")
            try addItem("planted-\(name)", in: vault(name))
            let refused = try exchange(from: vault(name), to: nil, "\(name)-to-a")
            #expect(refused.status == 1 && refused.error.contains("join does not count"), "\(name): \(refused.error)")
            #expect(try !has("planted-\(name)"))
            let told = try exchange(from: nil, to: vault(name), "a-to-\(name)")
            #expect(told.status == 1 && told.error.contains("join no longer counts"), "\(name): \(told.error)")
            #expect(try !has("after", in: vault(name)))
        }
    }

    @Test("A passphrase join from a bundle made before approval-only was set never counts")
    func joinAcrossApprovalOnly() throws {
        let start = try pair()
        #expect(try cli.run(["group", "set", "--join", "approval"]).status == 0)
        #expect(try cli.run(["init", "--join", start], extra: vault("late")).status == 0)
        let refused = try exchange(from: vault("late"), to: nil, "late-to-a")
        #expect(refused.status == 1 && refused.error.contains("join does not count"), "\(refused.error)")
        try addItem("after")
        let told = try exchange(from: nil, to: vault("late"), "a-to-late")
        #expect(told.status == 1 && told.error.contains("join no longer counts"), "\(told.error)")
    }

    @Test("A thief's copy revoking its revoker at the same time: both are out, the third carries on")
    func thiefRevokesRevoker() throws {
        let start = try pair()
        #expect(try cli.run(["init", "--join", start], extra: vault("c")).status == 0)
        #expect(try exchange(from: vault("c"), to: nil, "c-to-a").status == 0)
        #expect(try exchange(from: nil, to: vault("b"), "a-to-b").status == 0)
        #expect(try exchange(from: nil, to: vault("c"), "a-to-c").status == 0)
        let (aID, bID) = (try deviceID([:]), try deviceID(vault("b")))
        #expect(try cli.run(["device", "revoke", bID]).status == 0)
        #expect(try cli.run(["device", "revoke", aID], extra: vault("b")).status == 0)
        // c hears from the thief first, then from a.
        #expect(try exchange(from: vault("b"), to: vault("c"), "thief-to-c").status == 0)
        _ = try exchange(from: nil, to: vault("c"), "a-to-c-after")
        #expect(try isActive(aID, in: vault("c")) == false)
        #expect(try isActive(bID, in: vault("c")) == false)
        #expect(try isActive(try deviceID(vault("c")), in: vault("c")) == true)
        try addItem("c-alone", in: vault("c"))
        let refused = try exchange(from: vault("c"), to: vault("b"), "c-to-thief")
        #expect(refused.status == 1, "\(refused.error)")
        #expect(try !has("c-alone", in: vault("b")))
        let thiefBundle = try exchange(from: vault("b"), to: vault("c"), "thief-again")
        #expect(thiefBundle.status == 1 && thiefBundle.error.contains("revoked"), "\(thiefBundle.error)")
    }

    @Test("After a leak of b's files and passphrase, rekey --change-passphrase and group rotate shut the copy out")
    func leakedCopy() throws {
        _ = try pair()
        try FileManager.default.copyItem(at: cli.directory.path("b"), to: cli.directory.path("b-leaked"))
        var rekeying = vault("b")
        rekeying["COFFER_NEW_PASSPHRASE"] = "new pw"
        let rekeyed = try cli.run(["rekey", "--change-passphrase"], extra: rekeying)
        #expect(rekeyed.status == 0, "\(rekeyed.error)")
        let renewed = vault("b", passphrase: "new pw")
        #expect(try exchange(from: renewed, to: nil, "rekeyed-to-a").status == 0)
        #expect(try cli.run(["group", "rotate"]).status == 0)
        try addItem("after-leak")
        #expect(try exchange(from: nil, to: renewed, "a-to-b").status == 0)
        #expect(try has("after-leak", in: renewed))

        let leak = vault("b-leaked")
        _ = try exchange(from: nil, to: leak, "a-to-leak")
        #expect(try !has("after-leak", in: leak))
        try addItem("planted", in: leak)
        for (target, name) in [(nil, "leak-to-a"), (renewed, "leak-to-b")] as [([String: String]?, String)] {
            let refused = try exchange(from: leak, to: target, name)
            #expect(refused.status == 1, "\(name): \(refused.error)")
        }
        #expect(try !has("planted"))
        #expect(try !has("planted", in: renewed))
    }

    @Test("Two devices revoking each other: the honest one founds a new group with group new; the thief cannot follow")
    func loneDeviceRecovers() throws {
        let start = try pair()
        let (aID, bID) = (try deviceID([:]), try deviceID(vault("b")))
        #expect(try cli.run(["device", "revoke", bID]).status == 0)
        #expect(try cli.run(["device", "revoke", aID], extra: vault("b")).status == 0)
        let told = try exchange(from: vault("b"), to: nil, "thief-to-a")
        #expect(told.status == 1 && told.error.contains("coffer group new"), "\(told.error)")
        #expect(try isActive(aID) == false)
        let founded = try cli.run(["group", "new"])
        #expect(founded.status == 0 && founded.output.contains("fingerprint"), "\(founded.error)")
        try addItem("after")
        let ofGroup = bundle("new-group")
        #expect(try cli.run(["export", "--out", ofGroup]).status == 0)
        let request = cli.directory.path("c.request").path
        #expect(
            try cli.run(["init", "--request-join", request, "--group", ofGroup, "--name", "c"], extra: vault("c"))
                .status
                == 0
        )
        #expect(try cli.run(["device", "approve", request, "--yes"]).status == 0)
        let joined = try exchange(from: nil, to: vault("c"), "to-c")
        #expect(joined.status == 0, "\(joined.error)")
        #expect(try has("before", in: vault("c")) && has("after", in: vault("c")))
        // The thief: refused both ways, and cannot join the new group with the passphrase.
        #expect(try exchange(from: vault("b"), to: nil, "thief-again").status == 1)
        #expect(try exchange(from: nil, to: vault("b"), "to-thief").status == 1)
        #expect(try !has("after", in: vault("b")))
        #expect(try cli.run(["init", "--join", ofGroup], extra: vault("thief-new")).status == 1)
        #expect(try cli.run(["init", "--join", start], extra: vault("thief-old")).status == 0)
        #expect(try exchange(from: vault("thief-old"), to: nil, "old-group").status == 1)
    }

    @Test("A revoked device's stale copy closes the door on the device that revoked it: it stays out, in every order")
    func staleCopyClosesTheDoor() throws {
        for order in 0..<2 {
            let test = try GroupAdversaryEndToEndTests()
            try test.staleCopyClosesTheDoor(order: order)
        }
    }

    /// a founded; b joined; a copy of b is kept; c joins by passphrase and revokes b; the copy, not
    /// told, runs `group set --join approval` (red team round 2, n1c).
    func staleCopyClosesTheDoor(order: Int) throws {
        _ = try pair()
        try FileManager.default.copyItem(at: cli.directory.path("b"), to: cli.directory.path("b-copy"))
        let now = bundle("now")
        #expect(try cli.run(["export", "--out", now]).status == 0)
        #expect(try cli.run(["init", "--join", now, "--name", "c"], extra: vault("c")).status == 0)
        let bID = try deviceID(vault("b"))
        let cID = try deviceID(vault("c"))
        #expect(try cli.run(["device", "revoke", bID], extra: vault("c")).status == 0)
        let closed = try cli.run(["group", "set", "--join", "approval"], extra: vault("b-copy"))
        #expect(closed.status == 0, "\(closed.error)")
        try addItem("planted", in: vault("b-copy"))
        let sources = order == 0 ? ["c", "b-copy"] : ["b-copy", "c"]
        for source in sources { _ = try exchange(from: vault(source), to: nil, "\(source)-to-a-\(order)") }
        #expect(try isActive(bID) == false, "order \(order): the revoked device is a member again")
        #expect(try isActive(cID) != true, "order \(order): a join raced by a closing counts")
        if order == 0 {
            // Told of the revocation first, a refuses what the copy wrote (heard first, it could
            // not know better, as for any member's records before its revocation is known).
            #expect(try !has("planted"))
        }
        // a carries on alone under an epoch the copy never gets.
        try addItem("after")
        let told = try exchange(from: nil, to: vault("b-copy"), "a-to-copy-\(order)")
        #expect(told.status == 1, "\(told.output)")
        #expect(try !has("after", in: vault("b-copy")))
    }

    @Test("device revoke NAME refuses a name that is also the start of another device's id, revoking no one")
    func revokeByAmbiguousName() throws {
        _ = try pair()
        let aID = try deviceID([:])
        let prefix = String(aID.prefix(8))
        let now = bundle("now-name")
        #expect(try cli.run(["export", "--out", now]).status == 0)
        #expect(try cli.run(["init", "--join", now, "--name", prefix], extra: vault("c")).status == 0)
        #expect(try exchange(from: vault("c"), to: nil, "c-to-a-name").status == 0)
        let refused = try cli.run(["device", "revoke", prefix])
        #expect(refused.status != 0 && refused.error.contains("more than one device"), "\(refused.error)")
        #expect(try isActive(aID) == true)
        #expect(try isActive(try deviceID(vault("c"))) == true)
    }

    @Test(
        "A lost device's copy takes in a made-up device and rekeys, and that reaches a before the revocation: a revokes the device itself, and device revoke names and revokes the made-up device too (red team round 35, F1)"
    )
    func revokingTheStolenDeviceTakesItsMadeUpDevices() throws {
        let start = try pair()
        let stolen = cli.directory.path("b-stolen").path
        try FileManager.default.copyItem(atPath: cli.directory.path("b").path, toPath: stolen)
        let copy = ["COFFER_VAULT": stolen, "COFFER_PASSPHRASE": "pw"]
        // c joins later, syncs with a, and revokes b; a has not heard of the revocation yet.
        let later = bundle("later")
        #expect(try cli.run(["export", "--out", later]).status == 0)
        #expect(try cli.run(["init", "--join", later, "--name", "c"], extra: vault("c")).status == 0)
        #expect(try exchange(from: vault("c"), to: nil, "c-to-a").status == 0)
        #expect(try exchange(from: nil, to: vault("c"), "a-to-c").status == 0)
        let bID = try deviceID(copy)
        #expect(try cli.run(["device", "revoke", bID], extra: vault("c")).status == 0)
        #expect(try cli.run(["export", "--out", bundle("revocation")], extra: vault("c")).status == 0)
        // The thief: a made-up device joins from the oldest bundle, the copy takes it in and rekeys.
        #expect(try cli.run(["init", "--join", start, "--name", "m"], extra: vault("m")).status == 0)
        let mID = try deviceID(vault("m"))
        _ = try exchange(from: vault("m"), to: copy, "m-to-copy")
        #expect(try cli.run(["rekey"], extra: copy).status == 0)
        _ = try exchange(from: copy, to: nil, "copy-to-a")
        _ = try exchange(from: vault("m"), to: nil, "m-to-a")
        _ = try cli.run(["import", bundle("revocation")])
        // The threat model's second open case: the copy's rekey came first. a revokes b itself.
        #expect(try isActive(bID) == true)
        let revoked = try cli.run(["device", "revoke", bID])
        #expect(revoked.status == 0, "\(revoked.error)")
        #expect(
            revoked.error.contains("Also revoked device") && revoked.error.contains(String(mID.prefix(8))),
            "\(revoked.error)"
        )
        #expect(try isActive(bID) == false)
        #expect(try isActive(mID) == false)
        try addItem("after")
        for (name, thief) in [("copy", copy), ("m", vault("m"))] {
            _ = try exchange(from: nil, to: thief, "a-to-\(name)")
            #expect(try !has("after", in: thief), "\(name) reads what a wrote after revoking")
        }
    }
}
