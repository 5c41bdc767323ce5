import Coffer
import Foundation
import Testing

/// The error-handling examples of docs/EMBEDDING.md and the DocC catalog's Getting Started, compiled
/// as written and run; the documents are checked to still show them, so the two cannot drift apart.
/// `ErrorPatternCompileTests` (CofferCLITests) compiles them in a `main.swift` that awaits, where the
/// pattern they replaced crashed swiftc 6.3.1.
@Suite("Documented error pattern: the examples compile, run and are what the documents show")
struct DocumentedErrorPatternTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The unlock example, as docs/EMBEDDING.md shows it.
    static let unlockExample = """
        do throws(CofferError) {
            try again.unlock(passphrase: "correct horse battery staple")
        } catch where error.code == .authFailed {
            // wrong passphrase: nothing changed, still locked
        } catch {
            throw error                            // anything else: not this code's to handle
        }
        """

    /// The duplicate-item example, as Getting Started shows it.
    static let duplicateExample = """
        do throws(CofferError) {
            try vault.keychain.add(item)
        } catch where error.code == .duplicateItem {
            try vault.keychain.setPassword("pw", service: "mail", account: "ann")
        } catch {
            throw error
        }
        """

    @Test("the documents show the examples compiled below, and no catch by code alone")
    func documentsShowThem() throws {
        let embedding = try String(
            contentsOf: Self.repository.appendingPathComponent("docs/EMBEDDING.md"),
            encoding: .utf8
        )
        let started = try String(
            contentsOf: Self.repository.appendingPathComponent("Sources/Coffer/Coffer.docc/GettingStarted.md"),
            encoding: .utf8
        )
        #expect(embedding.contains(Self.unlockExample))
        #expect(started.contains(Self.duplicateExample))
        for text in [embedding, started] {
            #expect(!text.contains("} catch CofferError.Code."))
        }
    }

    /// A closed vault with `passphrase` in a directory of its own, and its configuration.
    static func vault(passphrase: Passphrase) async throws -> (URL, Vault.Configuration) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-doc-\(UUID())")
        var configuration = Vault.Configuration()
        configuration.kdf = .insecureFastForTesting
        try await Vault.create(at: directory, passphrase: passphrase, configuration: configuration).close()
        return (directory, configuration)
    }

    @Test("the unlock example, in async code: a wrong passphrase is caught, nothing else escapes")
    func unlockExample() async throws {
        let (directory, configuration) = try await Self.vault(passphrase: "another")
        defer { try? FileManager.default.removeItem(at: directory) }
        var again = try await Vault.open(at: directory, configuration: configuration)  // a local var, too
        // From docs/EMBEDDING.md, as written (``unlockExample``), synchronous as there.
        func example(_ again: Vault) throws {
            do throws(CofferError) {
                try again.unlock(passphrase: "correct horse battery staple")
            } catch  where error.code == .authFailed {
                // wrong passphrase: nothing changed, still locked
            } catch {
                throw error  // anything else: not this code's to handle
            }
        }
        try example(again)
        #expect(again.isLocked)
        again.close()
        again = try await Vault.open(at: directory, configuration: configuration)
        try await again.unlock(passphrase: "another")
        #expect(!again.isLocked)
        again.close()
    }

    @Test("the duplicate-item example, in async code: a duplicate becomes an update")
    func duplicateExample() async throws {
        let (directory, configuration) = try await Self.vault(passphrase: "p")
        defer { try? FileManager.default.removeItem(at: directory) }
        let vault = try await Vault.open(at: directory, configuration: configuration)
        try await vault.unlock(passphrase: "p")
        defer { vault.close() }
        var item = KeychainItem(.genericPassword, value: Data("pw".utf8))
        item.attributes.service = "mail"
        item.attributes.account = "ann"
        try await vault.keychain.add(item)
        // From Getting Started, as written (``duplicateExample``), run synchronously as there.
        try { () throws in
            do throws(CofferError) {
                try vault.keychain.add(item)
            } catch  where error.code == .duplicateItem {
                try vault.keychain.setPassword("pw", service: "mail", account: "ann")
            } catch {
                throw error
            }
        }()
        #expect(try await vault.keychain.password(service: "mail", account: "ann") == "pw")
    }
}
