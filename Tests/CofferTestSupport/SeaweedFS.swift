public import Foundation

/// A real SeaweedFS S3 server on loopback, started once per test process by `Tools/seaweedfs` (which
/// installs it first if needed) and stopped by its watchdog (`Tools/watchdog`, in a session of its
/// own) when the test process ends, however it ends: SIGTERM to the server's session, SIGKILL after a
/// grace period. The same for moto's server (``moto()``), `Tools/moto`: a second S3 implementation for
/// the tests.
public struct SeaweedFS: Sendable {
    /// The S3 endpoint, `http://127.0.0.1:PORT`.
    public let endpoint: URL
    /// The access key id the server accepts.
    public let accessKeyID: String
    /// Its secret.
    public let secretAccessKey: String
    /// The directory holding the server's data, log and settings.
    public let directory: URL

    /// The `AWS_*` and `AWS_ENDPOINT_URL` variables for a child `coffer` process.
    public var environment: [String: String] {
        [
            "AWS_ACCESS_KEY_ID": accessKeyID, "AWS_SECRET_ACCESS_KEY": secretAccessKey, "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": endpoint.absoluteString,
        ]
    }

    /// The server every test in this process shares, started on first use.
    ///
    /// - Throws: If the script cannot install or start it (its message says why: no network to PyPI,
    ///   no python3, a server that exits).
    public static func shared() throws -> SeaweedFS { try started.get() }

    /// moto's S3 server, shared the same way: every test in this process that asks gets the one
    /// started on first use.
    public static func moto() throws -> SeaweedFS { try startedMoto.get() }

    private static let started: Result<SeaweedFS, ProductError> = Result { () throws(ProductError) in
        try start("seaweedfs")
    }

    private static let startedMoto: Result<SeaweedFS, ProductError> = Result { () throws(ProductError) in
        try start("moto")
    }

    private static func start(_ server: String) throws(ProductError) -> SeaweedFS {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coffer-\(server)-\(UUID().uuidString)"
        )
        let result: Products.Result
        do {
            result = try Products.run(
                Products.tool(server),
                ["start", directory.path, Watchdog.owner],
                environment: [
                    "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
                ].merging(Watchdog.runEnvironment) { _, new in new }
            )
        } catch {
            throw ProductError(description: "cannot run Tools/\(server): \(error)")
        }
        guard result.status == 0 else {
            throw ProductError(description: "Tools/\(server) start failed (\(result.status)): \(result.error)")
        }
        var settings: [String: String] = [:]
        for line in result.output.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { settings[parts[0]] = parts[1] }
        }
        guard let endpoint = settings["AWS_ENDPOINT_URL"].flatMap({ URL(string: $0) }),
            let access = settings["AWS_ACCESS_KEY_ID"], let secret = settings["AWS_SECRET_ACCESS_KEY"]
        else {
            throw ProductError(description: "Tools/\(server) start printed no settings: \(result.output)")
        }
        return SeaweedFS(endpoint: endpoint, accessKeyID: access, secretAccessKey: secret, directory: directory)
    }
}
