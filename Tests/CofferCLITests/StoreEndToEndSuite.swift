import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// What the end-to-end suites that run `coffer` against an S3 server under one remote share: the
/// harness and the remote, and the helpers built on them.
protocol StoreEndToEndSuite {
    /// The harness whose vault is the default one.
    var cli: CLIHarness { get }
    /// The suite's remote, `s3://BUCKET/PREFIX`.
    var remote: String { get }
}

extension StoreEndToEndSuite {
    /// Adds a syncable item named `name` to vault directory `vault` (the harness's own when `nil`).
    func add(_ name: String, _ server: SeaweedFS, vault: String? = nil) throws {
        let added = try cli.run(
            ["item", "add", "--service", name, "--account", "ann", "--value", name, "--sync"],
            extra: environment(server, vault: vault)
        )
        #expect(added.status == 0, "\(added.error)")
    }

    /// Whether vault directory `vault` holds the item `add` adds under `name`.
    func holds(_ name: String, _ server: SeaweedFS, vault: String? = nil) throws -> Bool {
        let got = try cli.run(
            ["item", "get", "--service", name, "--account", "ann"],
            extra: environment(server, vault: vault)
        )
        return got.output == name
    }

    /// A client of `server` with the test's credentials, and the layout under the suite's remote.
    func store(_ server: SeaweedFS) throws -> (client: S3Client, layout: RemoteLayout) {
        let location = try S3Location(remote)
        let credentials = try S3Credentials(accessKeyID: server.accessKeyID, secretAccessKey: server.secretAccessKey)
        let store = S3Remote(location, credentials: credentials, endpoint: server.endpoint, region: "us-east-1")
        return (S3Client(store), RemoteLayout(location: location))
    }

    /// Runs `coffer arguments` on `server` against vault directory `vault` (the harness's own when
    /// `nil`) under `faketime -f clock`: on a device whose clock is off by `clock` (`+12m`).
    func run(
        _ arguments: [String],
        _ server: SeaweedFS,
        vault: String? = nil,
        clock: String
    ) throws
        -> Products.Result
    {
        let environment = cli.environment.merging(self.environment(server, vault: vault)) { _, new in new }
        return try Products.run(
            URL(fileURLWithPath: "/usr/bin/faketime"),
            ["-f", clock, cli.coffer.path] + arguments,
            environment: environment
        )
    }

    /// The bytes of the files in vault directory `name`.
    func diskUsage(_ name: String) throws -> UInt64 {
        let walker = FileManager.default.enumerator(at: cli.directory.path(name), includingPropertiesForKeys: nil)
        var total: UInt64 = 0
        while let url = walker?.nextObject() as? URL {
            total += UInt64((try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0)
        }
        return total
    }

    private func environment(_ server: SeaweedFS, vault: String?) -> [String: String] {
        var environment = server.environment
        if let vault { environment["COFFER_VAULT"] = cli.directory.path(vault).path }
        return environment
    }
}
