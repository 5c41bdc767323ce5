import Coffer
import CofferTestSupport
import Foundation
import Testing

/// A cross-tier transaction under kills (issue 43): the example app adds each photo and its details
/// in one `Vault.write`, and is killed with SIGKILL at random moments. After every kill the photo and
/// its details are both there, intact, or both absent; the app's own check agrees; nothing earlier is
/// lost; and the content a killed transaction streamed is released by the next write.
@Suite("Cross-tier transactions killed at random moments: a photo and its details, both or neither")
struct TransactionKillTests {
    static let passphrase = "photo pass"
    static let environment = ["SECURE_PHOTOS_PASSPHRASE": passphrase, "SECURE_PHOTOS_KDF": "fast"]

    /// `COFFER_CRASH_ITERATIONS`, else 24.
    static var iterations: Int {
        ProcessInfo.processInfo.environment["COFFER_CRASH_ITERATIONS"].flatMap { Int($0) } ?? 24
    }

    @Test("SIGKILL during photo adds: every photo has its details, and every acknowledged photo reads back")
    func randomKills() throws {
        let directory = try TemporaryDirectory()
        let app = try Products.executable("secure-photos")
        let vaultURL = directory.path("photos")
        let created = try Products.run(
            app,
            ["--vault", vaultURL.path, "create-account", "ann"],
            environment: Self.environment
        )
        try #require(created.status == 0, "\(created.error)")
        let seed =
            ProcessInfo.processInfo.environment["COFFER_CRASH_SEED"].flatMap { UInt64($0) } ?? .random(in: 1...99_999)
        var generator = SplitMix64(seed: seed)
        var acknowledged: [String: Data] = [:]
        var (killed, killedButCommitted, killedMidWrite) = (0, 0, 0)
        // How long an add takes here, measured by the first one: kills aim inside it.
        var addDuration = 0.3
        var pendingBefore = 0
        // Until at least three kills landed inside a transaction (the window is a fifth of an add).
        var index = -1
        while true {
            index += 1
            guard index < Self.iterations || (killedMidWrite < 3 && index < 3 * Self.iterations) else { break }
            let name = "p\(index).jpg"
            let content = Data(SplitMix64.bytes(100_000 + Int(generator.next() % 4_000_000), seed: generator.next()))
            let file = directory.path(name)
            try content.write(to: file)
            let delay = index == 0 ? 60 : addDuration * (0.3 + Double(generator.next() % 800) / 1000)
            let started = Date()
            let wasKilled = try Self.run(app, ["--vault", vaultURL.path, "add", file.path], killAfter: delay)
            if index == 0 { addDuration = Date().timeIntervalSince(started) }
            let whereItWas = "seed \(seed), iteration \(index) (\(content.count) bytes, killed: \(wasKilled))"

            let check = try Products.run(app, ["--vault", vaultURL.path, "check"], environment: Self.environment)
            #expect(check.status == 0, "\(whereItWas): \(check.output) \(check.error)")
            let vault = try Vault.open(at: vaultURL)
            defer { vault.close() }
            try vault.unlock(passphrase: Passphrase(Self.passphrase))
            // A killed transaction that had begun to stream leaves its pending entry (the next
            // writer releases it).
            let pending = try vault.environment.read { (txn) throws in try txn.count(vault.schema.pending) }
            if wasKilled, pending > pendingBefore { killedMidWrite += 1 }
            pendingBefore = pending
            let stored = try? vault.blobs.data("photos/" + name)
            let details = try Self.details(name, in: vault)
            if let stored {
                #expect(stored == content, "\(whereItWas): the photo is not what was added")
                #expect(details.count == 1, "\(whereItWas): the photo has no details")
                acknowledged[name] = content
                if wasKilled { killedButCommitted += 1 }
            } else {
                #expect(wasKilled, "\(whereItWas): an add that finished left no photo")
                #expect(details.isEmpty, "\(whereItWas): details of a photo that is not there")
            }
            if wasKilled { killed += 1 }
            for (earlier, bytes) in acknowledged.shuffled().prefix(2) {
                #expect(try vault.blobs.data("photos/" + earlier) == bytes, "\(whereItWas): \(earlier) changed")
            }
            try FileManager.default.removeItem(at: file)
        }
        // A last write releases what killed transactions streamed; then only photos' chunks remain.
        let vault = try Vault.open(at: vaultURL)
        defer { vault.close() }
        try vault.unlock(passphrase: Passphrase(Self.passphrase))
        _ = try vault.blobs.collectGarbage()
        let report = try vault.blobs.verify(readingData: true)
        #expect(report.problems.isEmpty, "seed \(seed): \(report.problems)")
        #expect(try vault.blobs.list().count == acknowledged.count)
        #expect(killedMidWrite > 0, "seed \(seed): no add was killed inside its transaction; the loop proved nothing")
        print(
            "reliability: transaction kill loop of \(index) photo adds (seed \(seed)): \(killed) killed, "
                + "\(killedMidWrite) of them inside the transaction, \(killedButCommitted) after it committed; "
                + "every photo with its details"
        )
    }

    /// The details items of the photo `name`.
    static func details(_ name: String, in vault: Vault) throws -> [KeychainItem] {
        try vault.keychain.items(matching: .genericPassword(service: "SecurePhotos.photo", account: name))
    }

    /// Runs the app, killing it with SIGKILL after `delay` seconds if it is still running.
    ///
    /// - Returns: Whether it was killed.
    static func run(_ app: URL, _ arguments: [String], killAfter delay: Double) throws -> Bool {
        try Products.runKilled(
            app,
            arguments,
            environment: environment.merging(["PATH": "/usr/bin:/bin"]) { _, new in new },
            after: delay
        )
    }
}
