import CofferTestSupport
import Foundation

@testable import Coffer

/// A shared fixture: a temporary directory and a cheap KDF, so vault tests run in milliseconds.
struct VaultFixture {
    let directory: TemporaryDirectory
    let configuration: Vault.Configuration

    init(directory: TemporaryDirectory, configuration: Vault.Configuration) {
        self.directory = directory
        self.configuration = configuration
    }

    init() throws {
        directory = try TemporaryDirectory()
        var configuration = Vault.Configuration()
        configuration.kdf = .insecureFastForTesting
        self.configuration = configuration
    }

    var vaultURL: URL { directory.path("vault") }

    func create(passphrase: Passphrase = "correct horse battery staple") throws -> Vault {
        try Vault.create(at: vaultURL, passphrase: passphrase, configuration: configuration)
    }

    func open() throws -> Vault { try Vault.open(at: vaultURL, configuration: configuration) }

    /// The raw bytes of every file in the vault directory.
    func vaultFileBytes() throws -> [UInt8] {
        try TemporaryDirectory.listing(vaultURL).flatMap { name in
            [UInt8](try Data(contentsOf: vaultURL.appendingPathComponent(name)))
        }
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs anywhere in the bytes.
    func contains(subsequence needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { start in
            self[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}
