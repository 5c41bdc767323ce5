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
        guard !needle.isEmpty else { return false }
        return !occurrences(of: [needle]).isEmpty
    }

    /// The needles that occur somewhere in the bytes, found in one pass: each position's first bytes
    /// are looked up in a set of the needles' first bytes, and only hits are compared in full.
    func occurrences(of needles: [[UInt8]]) -> Set<[UInt8]> {
        let prefixLength = needles.map(\.count).min() ?? 0
        guard prefixLength > 0 else { return [] }
        let width = Swift.min(prefixLength, 8)
        func prefix(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
            var value: UInt64 = 0
            for index in 0..<width { value = value << 8 | UInt64(bytes[offset + index]) }
            return value
        }
        var byPrefix: [UInt64: [[UInt8]]] = [:]
        for needle in needles { byPrefix[needle.withUnsafeBytes { prefix($0, at: 0) }, default: []].append(needle) }
        var found: Set<[UInt8]> = []
        withUnsafeBytes { haystack in
            guard haystack.count >= width else { return }
            var rolling = prefix(haystack, at: 0)
            let mask: UInt64 = width == 8 ? .max : (1 << UInt64(width * 8)) - 1
            for start in 0...(haystack.count - width) {
                if start > 0 { rolling = (rolling << 8 | UInt64(haystack[start + width - 1])) & mask }
                guard let candidates = byPrefix[rolling] else { continue }
                for needle in candidates where start + needle.count <= haystack.count {
                    if haystack[start..<(start + needle.count)].elementsEqual(needle) { found.insert(needle) }
                }
            }
        }
        return found
    }
}
