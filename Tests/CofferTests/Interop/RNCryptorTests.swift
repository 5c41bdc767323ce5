import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// RNCryptor-Spec's `title: … / key: value` vector files: one record per `title`.
func rncryptorRecords(_ name: String) throws -> [[String: String]] {
    var records: [[String: String]] = []
    for line in try Vectors.text(name).split(separator: "\n", omittingEmptySubsequences: false) {
        if line.hasPrefix("#") { continue }
        guard let colon = line.firstIndex(of: ":") else { continue }
        let key = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
        let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        if key == "title" { records.append([:]) }
        if !records.isEmpty { records[records.count - 1][key] = value }
    }
    return records
}

/// Hex with the vector files' spaces removed.
func spacedHex(_ text: String?) -> [UInt8] {
    [UInt8](hex: (text ?? "").filter { !$0.isWhitespace })
}

@Suite("RNCryptor v3 interoperability")
struct RNCryptorTests {
    @Test("PBKDF2-HMAC-SHA1 matches RFC 6070 and RNCryptor's kdf-short vectors")
    func pbkdf2() throws {
        var checked = 0
        let text = try Vectors.text("rfc6070-pbkdf2-sha1.txt")
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            fields[parts[0]] = parts[1].replacingOccurrences(of: "\\0", with: "\0")
            if parts[0] == "DK" {
                let expected = [UInt8](hex: fields["DK"]!)
                let key = try PBKDF2.sha1(
                    password: Array(fields["P"]!.utf8),
                    salt: Array(fields["S"]!.utf8),
                    iterations: Int(fields["c"]!)!,
                    byteCount: expected.count
                )
                #expect(key.withUnsafeBytes { Array($0) } == expected, "P=\(fields["P"]!) c=\(fields["c"]!)")
                checked += 1
            }
        }
        #expect(checked == 5)
        let short = try rncryptorRecords("rncryptor-v3-kdf-short.txt")
        #expect(short.count == 6)
        for record in short {
            let key = try PBKDF2.sha1(
                password: Array(record["password"]!.utf8),
                salt: spacedHex(record["salt_hex"]),
                iterations: Int(record["iterations"]!)!,
                byteCount: 32
            )
            #expect(key.withUnsafeBytes { Array($0) } == spacedHex(record["key_hex"]), "\(record["title"]!)")
        }
    }

    @Test("encrypting with the vectors' salts and IV gives their exact bytes; decrypting gives the plaintext")
    func passwordVectors() throws {
        let records = try rncryptorRecords("rncryptor-v3-password.txt").filter { !($0["ciphertext_hex"] ?? "").isEmpty }
        #expect(records.count == 6)
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        for record in records {
            let password = Array(record["password"]!.utf8)
            let plaintext = spacedHex(record["plaintext_hex"])
            let expected = spacedHex(record["ciphertext_hex"])
            var sink = try RNCryptor.EncryptingSink(
                base: DataSink(),
                password: password,
                encryptionSalt: spacedHex(record["enc_salt_hex"]),
                hmacSalt: spacedHex(record["hmac_salt_hex"]),
                iv: spacedHex(record["iv_hex"])
            )
            try plaintext.withUnsafeBytes { try sink.write($0) }
            try sink.finish()
            #expect([UInt8](sink.base.data) == expected, "\(record["title"]!)")

            try vault.blobs.importRNCryptor("v", data: expected, password: record["password"]!)
            #expect(try [UInt8](vault.blobs.data("v")) == plaintext, "\(record["title"]!)")
        }
    }

    @Test("a blob goes out as RNCryptor and comes back, streaming through files of several MiB")
    func roundTrip() throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        let content = Content.mixed(3_000_001, seed: 5)
        try vault.blobs.write("doc", data: content)
        let file = fixture.directory.path("doc.rncryptor")
        try vault.blobs.exportRNCryptor("doc", to: file, password: "hunter2 🔑")
        let encrypted = try Data(contentsOf: file)
        #expect(encrypted.count == RNCryptor.headerSize + (content.count / 16 + 1) * 16 + RNCryptor.tagSize)
        #expect(encrypted.prefix(2) == Data([3, 1]))
        try vault.blobs.importRNCryptor("again", from: file, password: "hunter2 🔑")
        #expect(try [UInt8](vault.blobs.data("again")) == content)
        #expect(try vault.blobs.rncryptorData("doc", password: "x").count == encrypted.count)
    }

    @Test("a wrong password, any flipped byte, truncation, or another format stores nothing")
    func rejected() throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        try vault.blobs.write("src", data: Content.random(100_000, seed: 1))
        let good = [UInt8](try vault.blobs.rncryptorData("src", password: "right"))
        func attempt(_ bytes: [UInt8], password: String = "right") -> CofferError? {
            #expect(throws: CofferError.self) {
                try vault.blobs.importRNCryptor("bad", data: bytes, password: password)
            }
        }
        #expect(attempt(good, password: "wrong")?.code == .authFailed)
        for position in [0, 1, 5, 12, 20, 40, good.count / 2, good.count - 33, good.count - 1] {
            var altered = good
            altered[position] ^= 0x04
            let error = attempt(altered)
            #expect(error != nil, "byte \(position)")
        }
        #expect(attempt(Array(good.dropLast(1)))?.code == .authFailed)
        #expect(attempt(Array(good.prefix(40)))?.code == .decode)
        #expect(attempt(Array(good.prefix(10)))?.code == .decode, "shorter than a header")
        #expect(attempt([2, 1] + good.dropFirst(2))?.code == .unsupportedFormat)
        #expect(attempt([3, 0] + good.dropFirst(2))?.code == .unsupportedFormat)
        #expect(try !vault.blobs.contains("bad"))
        #expect(try vault.blobs.list().map(\.name) == ["src"])
        #expect(try vault.blobs.verify().isHealthy, "the chunks of the refused imports were released")
        #expect(try vault.blobs.statistics().chunkCount == (try vault.blobs.stat("src")).chunkCount)
    }
}
