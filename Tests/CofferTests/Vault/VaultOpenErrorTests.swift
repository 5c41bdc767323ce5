import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Every way `Vault.open` can fail fails with a clear error and changes nothing on disk.
@Suite("Opening what is not a usable vault")
struct VaultOpenErrorTests {
    let fixture: VaultFixture

    init() throws { fixture = try VaultFixture() }

    func expectOpenFails(_ code: CofferError.Code, at url: URL, mentioning text: String) throws {
        let before = TemporaryDirectory.listing(url)
        let error = #expect(throws: CofferError.self) { _ = try Vault.open(at: url) }
        #expect(error?.code == code, "\(String(describing: error))")
        #expect(error?.message.contains(text) == true, "\(String(describing: error?.message))")
        #expect(TemporaryDirectory.listing(url) == before, "open changed the directory")
    }

    @Test("a missing directory: vaultNotFound, and nothing is created")
    func missing() throws {
        let url = fixture.directory.path("nothing")
        try expectOpenFails(.vaultNotFound, at: url, mentioning: "there is no vault at")
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("an empty directory or one with other files: notAVault")
    func notAVault() throws {
        try expectOpenFails(.notAVault, at: fixture.directory.url, mentioning: "not a Coffer vault")
        try Data("hello".utf8).write(to: fixture.directory.path("readme.txt"))
        try expectOpenFails(.notAVault, at: fixture.directory.url, mentioning: "no data.mdb")
    }

    @Test("a file instead of a directory: notAVault")
    func file() throws {
        let url = fixture.directory.path("file")
        try Data("x".utf8).write(to: url)
        let error = #expect(throws: CofferError.self) { _ = try Vault.open(at: url) }
        #expect(error?.code == .notAVault)
    }

    @Test("a data.mdb that is not a database: notAVault, file untouched, no lock file left")
    func garbage() throws {
        let url = fixture.directory.url
        let garbage = Data(repeating: 0x5a, count: 16384)
        try garbage.write(to: url.appendingPathComponent("data.mdb"))
        try expectOpenFails(.notAVault, at: url, mentioning: "not a database")
        #expect(try Data(contentsOf: url.appendingPathComponent("data.mdb")) == garbage)
    }

    @Test("another application's LMDB database: notAVault, no lock file left")
    func foreignLMDB() throws {
        let url = fixture.directory.url
        let environment = try Environment(directory: url, options: .init(createIfMissing: true))
        let table = try environment.openTables(["things"], create: true)[0]
        try environment.write { try $0.put(table, key: [1], value: [2]) }
        environment.close()
        try FileManager.default.removeItem(at: url.appendingPathComponent("lock.mdb"))
        try expectOpenFails(.notAVault, at: url, mentioning: "not a Coffer vault")
    }

    @Test("a vault of a newer format: unsupportedFormat, saying to upgrade, data unchanged")
    func newerFormat() throws {
        try fixture.create().close()
        let environment = try Environment(directory: fixture.vaultURL, options: .init())
        let schema = try Schema(environment: environment, create: false)
        try environment.write {
            try $0.put(
                schema.meta,
                key: Array("format".utf8),
                value: withUnsafeBytes(of: (Schema.formatVersion + 1).bigEndian) { Array($0) }
            )
        }
        environment.close()
        let before = try Data(contentsOf: fixture.vaultURL.appendingPathComponent("data.mdb"))
        try expectOpenFails(.unsupportedFormat, at: fixture.vaultURL, mentioning: "upgrade Coffer")
        #expect(try Data(contentsOf: fixture.vaultURL.appendingPathComponent("data.mdb")) == before)
    }

    @Test("damaged meta records fail with decode, never a crash")
    func damagedMeta() throws {
        try fixture.create().close()
        let environment = try Environment(directory: fixture.vaultURL, options: .init())
        let schema = try Schema(environment: environment, create: false)
        try environment.write { try $0.put(schema.meta, key: Array("vault-id".utf8), value: [1, 2, 3]) }
        environment.close()
        try expectOpenFails(.decode, at: fixture.vaultURL, mentioning: "damaged")

        try environment.reopenAndWrite { txn in
            try txn.put(schema.meta, key: Array("vault-id".utf8), value: [UInt8](repeating: 7, count: 16))
            try txn.put(schema.meta, key: Array("kdf".utf8), value: [1, 1, 15])
        }
        let vault = try fixture.open()
        let error = #expect(throws: CofferError.self) { try vault.unlock(passphrase: "correct horse battery staple") }
        #expect(error?.code == .decode)
    }

    @Test("a wrapped root moved to another entry no longer opens (associated data binds the name)")
    func swappedWrappedKeys() throws {
        try fixture.create().close()
        let environment = try Environment(directory: fixture.vaultURL, options: .init())
        let schema = try Schema(environment: environment, create: false)
        try environment.write { (txn) throws in
            let device = try txn.get(schema.meta, key: Array("root.device.passphrase".utf8))!
            let sync = try txn.get(schema.meta, key: Array("root.sync.passphrase".utf8))!
            try txn.put(schema.meta, key: Array("root.device.passphrase".utf8), value: sync)
            try txn.put(schema.meta, key: Array("root.sync.passphrase".utf8), value: device)
        }
        environment.close()
        let vault = try fixture.open()
        let error = #expect(throws: CofferError.self) { try vault.unlock(passphrase: "correct horse battery staple") }
        #expect(error?.code == .authFailed)
    }
}

extension Environment {
    /// Opens the same directory again, runs one write, and closes.
    func reopenAndWrite(_ body: (Transaction) throws -> Void) throws {
        let environment = try Environment(directory: directory, options: .init())
        defer { environment.close() }
        _ = try Schema(environment: environment, create: false)
        try environment.write(body)
    }
}
