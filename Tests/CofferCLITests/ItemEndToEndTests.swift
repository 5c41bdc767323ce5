import CofferTestSupport
import Foundation
import Testing

/// `coffer item …` run as a user would.
@Suite("coffer item end to end")
struct ItemEndToEndTests {
    let directory: TemporaryDirectory
    let coffer: URL

    init() throws {
        directory = try TemporaryDirectory()
        coffer = try Products.executable("coffer")
        #expect(try item(["init"], command: []).status == 0)
    }

    /// Runs `coffer [command] arguments` against the test vault.
    @discardableResult
    func item(_ arguments: [String], command: [String] = ["item"]) throws -> Products.Result {
        try Products.run(
            coffer,
            command + arguments,
            environment: ["COFFER_VAULT": directory.path("vault").path, "COFFER_PASSPHRASE": "pw"]
        )
    }

    @Test("add, get (raw bytes on stdout), find, update, delete")
    func lifecycle() throws {
        #expect(
            try item(["add", "--service", "mail", "--account", "ann", "--value", "hunter2", "--label", "Mail"]).status
                == 0
        )
        let got = try item(["get", "--service", "mail", "--account", "ann"])
        #expect(got.status == 0)
        #expect(got.output == "hunter2", "no newline is added to the value")

        let listed = try item(["find", "--json"])
        let items = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]])
        #expect(items.count == 1)
        #expect((items[0]["attributes"] as? [String: String])?["label"] == "Mail")
        #expect(items[0]["value"] == nil, "values are listed only with --show-value")
        #expect(!listed.output.contains("hunter2"))
        #expect(try item(["find", "--show-value"]).output.contains("value=hunter2"))

        #expect(
            try item(["update", "--service", "mail", "--value", "changed", "--set", "comment=rotated"]).status == 0
        )
        #expect(try item(["get", "--service", "mail", "--account", "ann"]).output == "changed")
        #expect(try item(["find", "--attribute", "comment=rotated"]).output.contains("account=ann"))

        #expect(try item(["delete", "--service", "mail", "--account", "ann"]).status == 0)
        let gone = try item(["get", "--service", "mail", "--account", "ann"])
        #expect(gone.status == 1)
        #expect(gone.error.contains("itemNotFound -25300"))
    }

    @Test("values from --value-file and standard input; binary values round-trip")
    func valueSources() throws {
        let file = directory.path("value.bin")
        let bytes = Data((0..<256).map { UInt8($0) })
        try bytes.write(to: file)
        #expect(try item(["add", "--service", "bin", "--account", "a", "--value-file", file.path]).status == 0)
        #expect(try item(["get", "--service", "bin", "--account", "a"]).status == 0)
        let listing = try item(["find", "--json", "--show-value", "--service", "bin"])
        #expect(listing.output.contains(bytes.base64EncodedString()))
        // An empty standard input is refused; an empty value must be given as such.
        #expect(try item(["add", "--service", "empty", "--account", "a"]).status == 1)
        #expect(try item(["add", "--service", "empty", "--account", "a", "--value", ""]).status == 0)
        let empty = try item(["get", "--service", "empty", "--account", "a"])
        #expect(empty.status == 0, "\(empty.error)")
        #expect(empty.output.isEmpty, "get printed \(empty.output.utf8.count) bytes: \(empty.output.debugDescription)")
    }

    @Test("errors carry Keychain Services' status names and numbers")
    func errors() throws {
        #expect(try item(["add", "--service", "s", "--account", "a", "--value", "1"]).status == 0)
        let duplicate = try item(["add", "--service", "s", "--account", "a", "--value", "2"])
        #expect(duplicate.status == 1)
        #expect(duplicate.error.contains("duplicateItem -25299"))
        let always = try item(["add", "--service", "t", "--account", "a", "--accessible", "always", "--value", "v"])
        #expect(always.status == 1)
        #expect(always.error.contains("param -50"))
        let syncLocal = try item([
            "add", "--service", "t", "--account", "a", "--sync", "--accessible", "whenUnlockedThisDeviceOnly",
            "--value", "v",
        ])
        #expect(syncLocal.error.contains("cannot be syncable"))
        let large = directory.path("large")
        try Data(count: 20_000).write(to: large)
        let tooLarge = try item(["add", "--service", "big", "--account", "a", "--value-file", large.path])
        #expect(tooLarge.status == 1)
        #expect(tooLarge.error.contains("blob tier"))
        #expect(try item(["add", "--class", "nonsense"]).status == 64)
        #expect(try item(["find", "--sync", "--device-only"]).status == 64)
        #expect(try item(["find", "--attribute", "colour=red"]).error.contains("known attribute"))
    }

    @Test(
        "scopes: --sync adds a syncable item, a key names one item in either scope, upsert keeps the scope unless told, update moves"
    )
    func scopes() throws {
        #expect(try item(["add", "--service", "s", "--account", "a", "--value", "1", "--sync"]).status == 0)
        let twice = try item(["add", "--service", "s", "--account", "a", "--value", "2"])
        #expect(twice.status == 1)
        #expect(twice.error.contains("already exists"))
        let kept = try item(["upsert", "--service", "s", "--account", "a", "--value", "2"])
        #expect(kept.status == 0)
        #expect(kept.error.contains("(syncable,"), "\(kept.error)")
        #expect(try item(["find", "--sync"]).output.split(separator: "\n").count == 1)
        #expect(try item(["find"]).output.split(separator: "\n").count == 1)
        #expect(try item(["get", "--service", "s", "--account", "a"]).output == "2")
        let moved = try item(["upsert", "--service", "s", "--account", "a", "--value", "3", "--device-only"])
        #expect(moved.error.contains("(deviceBound,"), "\(moved.error)")
        #expect(try item(["find", "--sync"]).status == 1)
        #expect(try item(["update", "--service", "s", "--sync"]).status == 0)
        #expect(try item(["get", "--service", "s", "--account", "a", "--sync"]).output == "3")
        #expect(try item(["delete", "--service", "s", "--sync"]).status == 0)
        #expect(try item(["find"]).status == 1)
    }

    @Test("an item that requires presence is not revealed without a terminal")
    func presence() throws {
        #expect(
            try item(["add", "--service", "bank", "--account", "a", "--value", "1234", "--requires-presence"]).status
                == 0
        )
        #expect(try item(["find", "--service", "bank"]).output.contains("requires presence"))
        let refused = try item(["get", "--service", "bank", "--account", "a"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("userCanceled -128"))
        #expect(!refused.output.contains("1234"))
    }
}
