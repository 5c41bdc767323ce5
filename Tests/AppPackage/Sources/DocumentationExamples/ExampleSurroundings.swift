import Coffer
import Foundation
import Synchronization

/// What an example takes from its surroundings, made for real when the example first names it: the
/// unlocked vault it works on (with a photo and a password in it), files to store, bundles from
/// another device, members of its group. Every path lies under ``sandbox``, the example's own
/// directory and the current directory while it runs; ``print(_:separator:terminator:)`` keeps what the
/// example prints.
///
/// A stand-in that cannot be made stops the run with the reason: that is the harness failing, not
/// the example.
///
/// A structure, so that an example's closures may name them without `self.`, as the documents show.
public struct ExampleSurroundings: Sendable {
    /// The example these surroundings are for.
    public let example: DocumentedExample
    /// The example's directory: every absolute path it names is placed under it.
    public let sandbox: String
    /// The S3 endpoint the sync examples talk to (the documents show a loopback one).
    public let s3Endpoint: String
    /// Put in front of the prefix of every store the example names, so that it has the store to itself.
    public let s3Prefix = "example-\(UUID().uuidString)/"

    private let state = State()

    /// What the surroundings made and what the example printed, shared by every copy.
    private final class State: Sendable {
        let made = Mutex<[String: any Sendable]>([:])
        let printed = Mutex<[String]>([])
    }

    /// Makes the example's directory, with the folders and files the documents' paths name.
    /// - Parameters:
    ///   - example: The example to run.
    ///   - sandbox: A directory that does not exist yet.
    ///   - s3Endpoint: The S3 server's endpoint.
    public init(for example: DocumentedExample, in sandbox: URL, s3Endpoint: String) throws {
        self.example = example
        self.sandbox = sandbox.path
        self.s3Endpoint = s3Endpoint
        let manager = FileManager.default
        for folder in ["media/usb", "tmp", "vaults", "srv/photos/2026/01", "srv/photos/cache", "data"] {
            try manager.createDirectory(at: sandbox.appending(path: folder), withIntermediateDirectories: true)
        }
        try Self.randomBytes(64 * 1024).write(to: sandbox.appending(path: "cat.jpg"))
        try Self.randomBytes(48 * 1024).write(to: sandbox.appending(path: "srv/photos/2026/01/dog.jpg"))
        try Data("draft".utf8).write(to: sandbox.appending(path: "srv/photos/2026/01/scan.tmp"))
        try Data("thumbnail".utf8).write(to: sandbox.appending(path: "srv/photos/cache/thumbs.db"))
        try Data("CREATE TABLE t(x);".utf8).write(to: sandbox.appending(path: "data/app.sqlite"))
    }

    /// What the example printed, a line per call.
    public var output: [String] { state.printed.withLock { $0 } }

    /// Keeps what the example prints, as `Swift.print` would write it.
    public func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
        let line = items.map { String(describing: $0) }.joined(separator: separator)
        state.printed.withLock { $0.append(line) }
    }

    // MARK: The names examples use

    /// The vault the example works on: unlocked, the founder of its sync group, holding a photo
    /// (`photos/cat.jpg`, `photos/old.jpg`) and a password (`mail`/`ann`).
    public var vault: Vault {
        standIn("vault") {
            let vault = try Vault.create(at: path("vaults/vault"), passphrase: passphrase, configuration: fast)
            try vault.blobs.write("photos/cat.jpg", data: Self.randomBytes(64 * 1024))
            try vault.blobs.write("photos/old.jpg", data: Self.randomBytes(8 * 1024))
            try vault.keychain.setPassword("hunter2", service: "mail", account: "ann")
            return vault
        }
    }

    /// Where a vault is: a fresh path for an example that creates one there, else ``vault``'s.
    public var url: URL { example.createsVaultAtURL ? path("vaults/new") : vault.directory }

    /// A photo to store.
    public var photoURL: URL { path("cat.jpg") }
    /// Where a bundle is to be written.
    public var bundleURL: URL { path("media/usb/out.bundle") }
    /// A bundle to be written and then read by another device.
    public var bundle: URL { path("media/usb/desktop.bundle") }
    /// A file in RNCryptor's format, written with the password "…".
    public var fileURL: URL {
        standIn("fileURL") {
            let file = path("legacy.rncryptor")
            try vault.blobs.write("legacy-source", data: Data("written by the old app".utf8))
            try vault.blobs.exportRNCryptor("legacy-source", to: file, password: "…")
            return file
        }
    }
    /// An hour from now.
    public var later: Date { Date(timeIntervalSinceNow: 3600) }
    /// Bytes to store.
    public var bytes: Data { Data("downloaded bytes".utf8) }
    /// A pipe's read end, its writer done, holding 10 KiB.
    public var socketOrPipe: Int32 {
        standIn("socketOrPipe") {
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
            let content = Self.randomBytes(10 * 1024)
            _ = content.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }
            close(ends[1])
            return ends[0]
        }
    }
    /// A sequence of bytes that ends: two pieces.
    public var asyncSequenceOfData: AsyncStream<Data> {
        AsyncStream { continuation in
            continuation.yield(Self.randomBytes(4096))
            continuation.yield(Self.randomBytes(100))
            continuation.finish()
        }
    }
    /// Takes a piece of a stream.
    public func consume(_ piece: Data) { precondition(!piece.isEmpty, "an empty piece") }
    /// A snapshot of `/srv/photos` taken before.
    public var older: SnapshotInfo {
        standIn("older") { try vault.snapshots.backup(directory: path("srv/photos")).snapshot }
    }
    /// A bundle ``vault`` exported, for another device to import.
    public var laterBundle: URL {
        standIn("laterBundle") {
            let bundle = path("media/usb/later.bundle")
            try vault.export(to: bundle)
            return bundle
        }
    }
    /// Another device of ``vault``'s group.
    public var other: Vault {
        standIn("other") {
            let bundle = path("tmp/for-other.bundle")
            try vault.export(to: bundle)
            return try Vault.join(bundle: bundle, at: path("vaults/other"), passphrase: passphrase).vault
        }
    }
    /// A device with keys that may delete from the store: ``vault``, the group's founder.
    public var admin: Vault { vault }
    /// A member of the group: ``vault``.
    public var desktop: Vault { vault }
    /// A device of ``desktop``'s group that its owner lost.
    public var lostPhone: GroupMember {
        standIn("lostPhone") {
            let invitation = path("tmp/for-phone.bundle")
            try desktop.export(to: invitation)
            let phone = try Vault.join(bundle: invitation, at: path("vaults/phone"), passphrase: passphrase).vault
            let news = path("tmp/from-phone.bundle")
            try phone.export(to: news)
            phone.close()
            try desktop.import(from: news)
            guard let member = try desktop.members().first(where: { !$0.isThisDevice && $0.isActive }) else {
                throw CofferError(.itemNotFound, "the phone is not among the desktop's members")
            }
            return member
        }
    }
    /// What ``desktop`` exports now, for a device it approved.
    public var bundleFromDesktop: URL {
        let bundle = path("media/usb/from-desktop-\(UUID().uuidString).bundle")
        do { try desktop.export(to: bundle) } catch { fatalError("bundleFromDesktop: \(error)") }
        return bundle
    }
    /// A directory for a new device's vault.
    public var phoneDirectory: URL { path("vaults/phone-new") }
    /// A directory for a new device's vault.
    public var laptopDirectory: URL { path("vaults/laptop") }
    /// An app's data directory, to back up.
    public var dataDirectory: URL { path("data") }
    /// The write key fingerprint ``vault`` gives out.
    public var pinned: String { standIn("pinned") { try vault.writeKeyFingerprint } }
    /// Shows or hides the app's lock screen.
    public func showLockScreen(_ locked: Bool) {}
    /// Asks the user; here the user always agrees.
    public func askTheUser(_ reason: String) -> Bool { !reason.isEmpty }

    // MARK: Making them

    /// The passphrase of the surroundings' vaults: the example's, or a usual one.
    private var passphrase: Passphrase { Passphrase(example.passphrase ?? "correct horse battery staple") }

    /// The surroundings' vaults derive keys cheaply; the examples' own vaults use the defaults.
    private var fast: Vault.Configuration {
        var configuration = Vault.Configuration()
        configuration.kdf = .insecureFastForTesting
        return configuration
    }

    private func path(_ relative: String) -> URL { URL(fileURLWithPath: sandbox).appending(path: relative) }

    private func standIn<Value: Sendable>(_ name: String, _ make: () throws -> Value) -> Value {
        if let value = state.made.withLock({ $0[name] }) as? Value { return value }
        do {
            let value = try make()
            state.made.withLock { $0[name] = value }
            return value
        } catch {
            fatalError("the surroundings cannot make \(name) for \(example): \(error)")
        }
    }

    private static func randomBytes(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}

extension ExampleSurroundings {
    /// Closes every vault the surroundings made.
    public func closeVaults() {
        for case let vault as Vault in state.made.withLock({ Array($0.values) }) { vault.close() }
    }
}
