import CofferTestSupport
import Foundation
import Testing

/// `coffer push|pull|init --join s3://` run as a user would, against a real SeaweedFS.
@Suite("coffer push and pull end to end")
struct RemoteEndToEndTests {
    let cli: CLIHarness
    let server: SeaweedFS
    let remote: String

    var directory: TemporaryDirectory { cli.directory }

    init() throws {
        cli = try CLIHarness()
        server = try SeaweedFS.shared()
        remote = "s3://coffer-cli-tests/" + UUID().uuidString.lowercased()
    }

    /// Runs `coffer` against vault A (or `vault`) with the server's settings.
    @discardableResult
    func run(_ arguments: [String], vault: String? = nil, extra: [String: String] = [:]) throws -> Products.Result {
        var environment = server.environment.merging(extra) { _, new in new }
        if let vault { environment["COFFER_VAULT"] = directory.path(vault).path }
        return try cli.run(arguments, extra: environment)
    }

    @Test("a delete racing a rename, through the store: every pull goes on, and both end with the renamed blob")
    func deleteRacingRename() throws {
        let file = directory.path("photo.bin")
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ $0 >> 5) }).write(to: file)
        #expect(try run(["put", "x", file.path]).status == 0)
        #expect(try run(["push", remote, "--create-bucket"]).status == 0)
        #expect(try run(["init", "--join", remote], vault: "b").status == 0)
        #expect(try run(["push", remote], vault: "b").status == 0)
        #expect(try run(["pull", remote]).status == 0)
        // A deletes x while B renames it, and B adds an unrelated item.
        #expect(try run(["rm", "x"]).status == 0)
        #expect(try run(["mv", "x", "y"], vault: "b").status == 0)
        #expect(
            try run(["item", "add", "--service", "mail", "--account", "ann", "--sync", "--value", "v"], vault: "b")
                .status == 0
        )
        #expect(try run(["push", remote], vault: "b").status == 0)
        let held = try run(["pull", remote])
        #expect(held.status == 3, "\(held.error)")
        #expect(held.error.contains("for data this vault lacks"))
        #expect(try run(["item", "get", "--service", "mail", "--account", "ann"]).output == "v")
        // A's push asks for the chunks, B's pull and push answer, A's pull applies y.
        let ask = try run(["push", remote, "--json"])
        #expect(ask.status == 0)
        #expect(ask.output.contains("\"wantedChunks\" : 0") == false, "\(ask.output)")
        #expect(try run(["pull", remote], vault: "b").status == 0)
        let answer = try run(["push", remote, "--json"], vault: "b")
        #expect(answer.status == 0)
        #expect(answer.output.contains(".bundle"), "\(answer.output)")
        let done = try run(["pull", remote])
        #expect(done.status == 0, "\(done.error)")
        let restored = directory.path("y.out")
        #expect(try run(["get", "y", restored.path]).status == 0)
        #expect(try Data(contentsOf: restored) == Data(contentsOf: file))
        #expect(try run(["verify", "--read-data"]).status == 0)
    }

    @Test("push, init --join s3://, pull: syncable records travel through the store, device-bound ones stay")
    func story() throws {
        let file = directory.path("photo.bin")
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }).write(to: file)
        #expect(try run(["put", "photo", file.path]).status == 0)
        #expect(
            try run(["item", "add", "--service", "mail", "--account", "ann", "--value", "synced", "--sync"]).status == 0
        )
        #expect(try run(["item", "add", "--service", "wifi", "--account", "home", "--value", "local"]).status == 0)

        let pushed = try run(["push", remote, "--create-bucket", "--json"])
        #expect(pushed.status == 0, "\(pushed.error)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(pushed.output.utf8)) as? [String: Any])
        #expect((summary["object"] as? String)?.hasSuffix(".bundle") == true)
        #expect(((summary["export"] as? [String: Any])?["records"] as? [String: Any])?["items"] as? Int == 1)

        let joined = try run(["init", "--join", remote], vault: "b")
        #expect(joined.status == 0, "\(joined.error)")
        #expect(joined.output.contains("Pulled 1 bundle"))
        let restored = directory.path("photo.out")
        #expect(try run(["get", "photo", restored.path], vault: "b").status == 0)
        #expect(try Data(contentsOf: restored) == Data(contentsOf: file))
        #expect(try run(["item", "get", "--service", "mail", "--account", "ann"], vault: "b").output == "synced")
        #expect(try run(["item", "get", "--service", "wifi", "--account", "home"], vault: "b").status == 1)

        // A change on B comes back to A; pushing and pulling again moves nothing new.
        #expect(try run(["item", "update", "--service", "mail", "--value", "from b"], vault: "b").status == 0)
        #expect(try run(["push", remote], vault: "b").status == 0)
        let pulled = try run(["pull", remote])
        #expect(pulled.status == 0, "\(pulled.error)")
        #expect(pulled.output.contains("applied 1 item"))
        #expect(try run(["item", "get", "--service", "mail", "--account", "ann"]).output == "from b")
        #expect(try run(["push", remote]).output.contains("Nothing to push") == false)
        #expect(try run(["push", remote]).output.contains("Nothing to push"))

        // A third vault: the pull after B's next push names the one device whose bundle it got.
        #expect(try run(["init", "--join", remote], vault: "c").status == 0)
        #expect(try run(["item", "update", "--service", "mail", "--value", "again"], vault: "b").status == 0)
        #expect(try run(["push", remote], vault: "b").status == 0)
        let third = try run(["pull", remote], vault: "c")
        #expect(
            third.output.contains("Pulled 1 bundle") && third.output.contains("from 1 of the 2 other devices"),
            "\(third.output)"
        )
    }

    @Test(
        "A coffer push killed at any moment is either complete or invisible to pull, and the next push finishes it",
        arguments: [0.05, 0.3, 0.8]
    )
    func killedPush(after seconds: Double) throws {
        let first = try run(["push", remote, "--create-bucket"])
        #expect(first.status == 0, "\(first.error)")
        let joined = try run(["init", "--join", remote], vault: "b")
        #expect(joined.status == 0, "\(joined.error)")
        let file = directory.path("big.bin")
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        try random.readData(ofLength: 40 << 20).write(to: file)
        #expect(try run(["put", "big", file.path]).status == 0)

        let push = Process()
        push.executableURL = cli.coffer
        push.arguments = ["push", remote, "--quiet"]
        push.environment = cli.environment.merging(server.environment) { _, new in new }
        push.standardOutput = Products.nullDevice()
        push.standardError = Products.nullDevice()
        try push.run()
        Thread.sleep(forTimeInterval: seconds)
        kill(push.processIdentifier, SIGKILL)
        push.waitUntilExit()

        let pulled = try run(["pull", remote, "--json"], vault: "b")
        #expect(pulled.status == 0, "\(pulled.error)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(pulled.output.utf8)) as? [String: Any])
        let blobs = (summary["applied"] as? [String: Any])?["blobs"] as? Int
        #expect(blobs == 0 || blobs == 1)
        if blobs == 0 {
            #expect(try run(["get", "big", directory.path("none").path], vault: "b").status == 1)
            #expect(try run(["push", remote]).status == 0)
            #expect(try run(["pull", remote], vault: "b").status == 0)
        }
        let restored = directory.path("big.out")
        #expect(try run(["get", "big", restored.path], vault: "b").status == 0)
        #expect(try Data(contentsOf: restored) == Data(contentsOf: file))
    }

    @Test("remote compact: the store shrinks to one copy and a new vault joins from the checkpoint")
    func compact() throws {
        let file = directory.path("photo.bin")
        var generator = SplitMix64(seed: 3)
        try Data((0..<600_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }).write(to: file)
        #expect(try run(["put", "photo", file.path]).status == 0)
        #expect(try run(["push", remote, "--create-bucket"]).status == 0)
        #expect(try run(["init", "--join", remote], vault: "b").status == 0)
        for round in 0..<3 {
            let item = ["item", "add", "--service", "s\(round)", "--account", "ann", "--sync", "--value", "v\(round)"]
            #expect(try run(item, vault: "b").status == 0)
            #expect(try run(["put", "photo", file.path]).status == 0)
            #expect(try run(["push", remote], vault: "b").status == 0)
            #expect(try run(["push", remote]).status == 0)
            #expect(try run(["pull", remote]).status == 0)
        }
        let compacted = try run(["remote", "compact", remote, "--json"])
        #expect(compacted.status == 0, "\(compacted.error)")
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(compacted.output.utf8)) as? [String: Any]
        )
        let after = try #require(summary["storedBytesAfter"] as? Int)
        let checkpoint = try #require(summary["checkpointBytes"] as? Int)
        #expect(Double(after) <= 1.2 * Double(checkpoint), "\(summary)")
        let joined = try run(["init", "--join", remote], vault: "c")
        #expect(joined.status == 0, "\(joined.error)")
        #expect(joined.output.contains("1 checkpoint"), "\(joined.output)")
        for round in 0..<3 {
            let value = try run(["item", "get", "--service", "s\(round)", "--account", "ann"], vault: "c")
            #expect(value.output == "v\(round)")
        }
        let out = directory.path("photo.out")
        #expect(try run(["get", "photo", out.path], vault: "c").status == 0)
        #expect(try Data(contentsOf: out) == Data(contentsOf: file))
        #expect(try run(["pull", remote], vault: "b").status == 0)
    }

    @Test("--limit-upload and --limit-download: transfers go through under a limit; bad values are usage errors")
    func limits() throws {
        let file = directory.path("photo.bin")
        var generator = SplitMix64(seed: 8)
        try Data((0..<300_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }).write(to: file)
        #expect(try run(["put", "photo", file.path]).status == 0)
        let pushed = try run(["push", remote, "--create-bucket", "--limit-upload", "4096"])
        #expect(pushed.status == 0, "\(pushed.error)")
        let joined = try run(["init", "--join", remote, "--limit-download", "4096"], vault: "b")
        #expect(joined.status == 0, "\(joined.error)")
        let out = directory.path("photo.out")
        #expect(try run(["get", "photo", out.path], vault: "b").status == 0)
        #expect(try Data(contentsOf: out) == Data(contentsOf: file))
        for bad in ["0", "-5", "fast", "1.5"] {
            let refused = try run(["pull", remote, "--limit-download", bad], vault: "b")
            #expect(refused.status == 64 && refused.error.contains("--limit-download"), "\(bad): \(refused.error)")
        }
    }

    @Test("Bad credentials, locations and endpoints fail with a message and the right exit status")
    func refusals() throws {
        let wrongSecret = try run(["push", remote, "--create-bucket"], extra: ["AWS_SECRET_ACCESS_KEY": "wrong"])
        #expect(wrongSecret.status == 1)
        #expect(wrongSecret.error.contains("refused"))
        #expect(wrongSecret.error.contains("AWS_SECRET_ACCESS_KEY"))

        let noKeys = try cli.run(["pull", remote])
        #expect(noKeys.status == 1)
        #expect(noKeys.error.contains("no S3 credentials"))

        let notS3 = try run(["pull", "https://example.com/bucket"])
        #expect(notS3.status == 1)
        #expect(notS3.error.contains("is not an S3 location"))

        let badEndpoint = try run(["pull", remote, "--endpoint", "not a url"])
        #expect(badEndpoint.status == 64)
        #expect(badEndpoint.error.contains("is not an endpoint URL"))

        let missingBucket = try run(["pull", "s3://no-such-bucket-\(UUID().uuidString.lowercased().prefix(8))"])
        #expect(missingBucket.status == 1)
        #expect(missingBucket.error.contains("does not exist"))

        let credentials = directory.path("credentials")
        try "[default]\naws_access_key_id = \(server.accessKeyID)\naws_secret_access_key = \(server.secretAccessKey)\n"
            .write(to: credentials, atomically: true, encoding: .utf8)
        let fromFile = try cli.run(
            [
                "push", remote, "--create-bucket", "--credentials-file", credentials.path, "--endpoint",
                server.endpoint.absoluteString,
            ]
        )
        #expect(fromFile.status == 0, "\(fromFile.error)")
    }
}
