import CofferTestSupport
import Foundation
import Testing

/// The example app (issue 10), driven end to end as docs/EMBEDDING.md walks through it: an account
/// whose credentials need the passphrase again, photos sealed whenUnlocked, idle auto-lock in a
/// session, and the syncable part carried to a second machine by a bundle.
@Suite("Example app: SecurePhotos end to end")
struct SecurePhotosTests {
    let directory: TemporaryDirectory
    let app: URL
    let environment = ["SECURE_PHOTOS_PASSPHRASE": "photo pass", "SECURE_PHOTOS_KDF": "fast"]

    init() throws {
        directory = try TemporaryDirectory()
        app = try Products.executable("secure-photos")
    }

    /// Runs the app on the vault `vault` with `arguments`, giving it `input` on standard input.
    @discardableResult
    func run(_ vault: String, _ arguments: [String], input: String? = nil) throws -> Products.Result {
        try Products.run(
            app,
            ["--vault", directory.path(vault).path] + arguments,
            environment: environment,
            input: input
        )
    }

    @Test("create an account, add and export photos, reveal credentials, auto-lock, and move to a second machine")
    func walkthrough() throws {
        let cat = Data(SplitMix64.bytes(400_000, seed: 1))
        let dog = Data(SplitMix64.bytes(3_000, seed: 2))
        try cat.write(to: directory.path("cat.jpg"))
        try dog.write(to: directory.path("dog.png"))

        let created = try run("laptop", ["create-account", "ann"])
        #expect(created.status == 0, "\(created.error)")
        #expect(try run("laptop", ["whoami"]).output == "Logged in as ann.\n")
        let added = try run("laptop", ["add", directory.path("cat.jpg").path, directory.path("dog.png").path])
        #expect(added.output == "Added cat.jpg.\nAdded dog.png.\n", "\(added.error)")
        #expect(try run("laptop", ["list"]).output == "400000\tcat.jpg\n3000\tdog.png\n")
        #expect(try run("laptop", ["export", "cat.jpg", directory.path("out.jpg").path]).status == 0)
        #expect(try Data(contentsOf: directory.path("out.jpg")) == cat)

        // The credentials need the passphrase again: right, wrong, or none at all.
        let revealed = try run("laptop", ["credentials"], input: "photo pass\n")
        #expect(revealed.status == 0)
        let token = revealed.output.split(separator: " ").last.map { String($0.dropLast()) } ?? ""
        #expect(revealed.output.hasPrefix("ann: ") && token.count == 32, "\(revealed.output)")
        #expect(revealed.error.contains("Passphrase again to read 1 item that requires user presence"))
        let wrong = try run("laptop", ["credentials"], input: "not it\n")
        #expect(wrong.status == 1)
        #expect(wrong.error.contains("authentication failed") && !wrong.output.contains(token))
        let canceled = try run("laptop", ["credentials"], input: "\n")
        #expect(canceled.status == 1)
        #expect(canceled.error.contains("canceled"))

        // A session locks itself after a second idle; photos then need the passphrase.
        let session = try run(
            "laptop",
            ["session", "--idle-lock", "1"],
            input: "list\nwait 3\nexport dog.png \(directory.path("d1.png").path)\nunlock\n"
                + "export dog.png \(directory.path("d2.png").path)\n"
        )
        #expect(
            session.output == """
                400000\tcat.jpg
                3000\tdog.png
                Locked: export needs the passphrase; type unlock.
                Unlocked.
                Exported dog.png.

                """,
            "\(session.error)"
        )
        #expect(!FileManager.default.fileExists(atPath: directory.path("d1.png").path))
        #expect(try Data(contentsOf: directory.path("d2.png")) == dog)

        // The second machine gets the account and the photos, not the device-bound settings.
        let bundle = directory.path("photos.bundle").path
        let exported = try run("laptop", ["sync-out", bundle])
        #expect(
            exported.output == "Wrote 2 photos and 3 items (account and details) to \(bundle).\n",
            "\(exported.error)"
        )
        let joined = try run("desktop", ["sync-in", bundle])
        #expect(joined.output == "Joined as ann with 2 photos.\n", "\(joined.error)")
        #expect(try run("desktop", ["export", "cat.jpg", directory.path("cat2.jpg").path]).status == 0)
        #expect(try Data(contentsOf: directory.path("cat2.jpg")) == cat)
        #expect(try run("desktop", ["credentials"], input: "photo pass\n").output == "ann: \(token)\n")
        #expect(try run("desktop", ["check"]).output == "Every photo has its details.\n")
    }

    @Test("bad input: an unknown command is a usage error, a wrong passphrase logs nobody in")
    func badInput() throws {
        #expect(try run("v", ["create-account", "ann"]).status == 0)
        let unknown = try run("v", ["frobnicate"])
        #expect(unknown.status == 64)
        #expect(unknown.error.contains("'frobnicate' is not a command"))
        let wrong = try Products.run(
            app,
            ["--vault", directory.path("v").path, "list"],
            environment: ["SECURE_PHOTOS_PASSPHRASE": "not it", "SECURE_PHOTOS_KDF": "fast"]
        )
        #expect(wrong.status == 1)
        #expect(wrong.error.contains("passphrase is wrong"))
    }
}
