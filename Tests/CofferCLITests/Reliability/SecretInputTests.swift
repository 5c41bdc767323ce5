import CofferTestSupport
import Foundation
import Testing

/// Passphrase files of raw bytes and secrets from empty input, through the `coffer` binary.
@Suite("Secret input: binary passphrase files, empty values")
struct SecretInputTests {
    let directory: TemporaryDirectory
    let coffer: URL

    init() throws {
        directory = try TemporaryDirectory()
        coffer = try Products.executable("coffer")
    }

    func keyFile(_ name: String, _ bytes: [UInt8]) throws -> String {
        let url = directory.path(name)
        try Data(bytes).write(to: url)
        return url.path
    }

    func run(_ arguments: [String], vault: String, input: String? = nil) throws -> Products.Result {
        try Products.run(coffer, arguments + ["--vault", vault], input: input)
    }

    @Test("a vault made with a binary key file opens with that file only; bytes are the passphrase exactly")
    func binaryKeyFiles() throws {
        let vault = directory.path("vault").path
        let key = try keyFile("key", (0..<32).map { _ in UInt8.random(in: 0...255) } + [0xFF])
        let other = try keyFile("other", (0..<32).map { _ in UInt8.random(in: 0...255) } + [0xFE])
        #expect(try run(["init", "--passphrase-file", key], vault: vault).status == 0)
        #expect(try run(["info", "--passphrase-file", key], vault: vault).status == 0)
        let wrong = try run(["info", "--passphrase-file", other], vault: vault)
        #expect(wrong.status == 1)
        #expect(wrong.error.contains("passphrase is wrong"))

        // Bytes ff..f8 and 80..87 decoded to the same text before; now they are different passphrases.
        let second = directory.path("second").path
        let high = try keyFile("high", Array(0xF8...0xFF).reversed())
        let continuation = try keyFile("continuation", Array(0x80...0x87))
        #expect(try run(["init", "--passphrase-file", high], vault: second).status == 0)
        #expect(try run(["info", "--passphrase-file", continuation], vault: second).status == 1)
        #expect(try run(["info", "--passphrase-file", high], vault: second).status == 0)
    }

    @Test("a vault an earlier Coffer keyed from a binary file (read lossily) still opens with it, with a warning")
    func legacyLossyPassphrase() throws {
        let vault = directory.path("legacy").path
        let bytes: [UInt8] = [0x80, 0x81, 0x41, 0xFF]
        // What an earlier Coffer made of those bytes: each invalid byte became U+FFFD.
        let lossy = try keyFile("lossy", Array(String(decoding: bytes, as: UTF8.self).utf8))
        #expect(try run(["init", "--passphrase-file", lossy], vault: vault).status == 0)
        let opened = try run(["info", "--passphrase-file", try keyFile("binary", bytes)], vault: vault)
        #expect(opened.status == 0, "\(opened.error)")
        #expect(opened.error.contains("run coffer passwd"))
    }

    @Test("a passphrase in $COFFER_PASSPHRASE that is not UTF-8 is its bytes, exactly as from --passphrase-file")
    func binaryEnvironmentPassphrase() throws {
        let vault = directory.path("environment").path
        /// Runs coffer with `COFFER_PASSPHRASE` set to `bytes` by the shell (Foundation's `Process`
        /// takes only text for the environment).
        func coffer(_ arguments: [String], passphrase bytes: [UInt8]) throws -> Products.Result {
            let escaped = bytes.map { "\\x" + String($0, radix: 16) }.joined()
            return try Products.run(
                URL(fileURLWithPath: "/bin/bash"),
                ["-c", "COFFER_PASSPHRASE=\"$(printf '\(escaped)')\" exec \"$@\"", "coffer", self.coffer.path]
                    + arguments + ["--vault", vault]
            )
        }
        let bytes: [UInt8] = [0x80, 0x81, 0x41, 0xFF, 0x70, 0x77]
        #expect(try coffer(["init"], passphrase: bytes).status == 0)
        #expect(try coffer(["ls"], passphrase: bytes).status == 0)
        #expect(try run(["ls", "--passphrase-file", try keyFile("same", bytes)], vault: vault).status == 0)
        // Read lossily, other invalid bytes and their replacement text were the same passphrase.
        let other = try coffer(["ls"], passphrase: [0x80, 0x81, 0x41, 0xFE, 0x70, 0x77])
        #expect(other.status == 1)
        #expect(other.error.contains("passphrase is wrong"), "\(other.error)")
        let lossy = Array(String(decoding: bytes, as: UTF8.self).utf8)
        #expect(try run(["ls", "--passphrase-file", try keyFile("lossy-text", lossy)], vault: vault).status == 1)
        // The same bytes change the passphrase (COFFER_NEW_PASSPHRASE is read the same way).
        let newFile = try keyFile("new", [0xC3, 0x28, 0x61])
        #expect(try coffer(["passwd", "--new-passphrase-file", newFile], passphrase: bytes).status == 0)
        #expect(try coffer(["ls"], passphrase: [0xC3, 0x28, 0x61]).status == 0)
        #expect(try coffer(["ls"], passphrase: bytes).status == 1)
    }

    @Test("item add and update refuse an empty standard input or file; nothing is stored")
    func emptyValues() throws {
        let vault = directory.path("items").path
        let environment = ["COFFER_PASSPHRASE": "pw"]
        func coffer(_ arguments: [String], input: String? = nil) throws -> Products.Result {
            try Products.run(self.coffer, arguments + ["--vault", vault], environment: environment, input: input)
        }
        #expect(try coffer(["init"]).status == 0)
        let empty = try coffer(["item", "add", "--service", "s", "--account", "a"], input: "")
        #expect(empty.status == 1)
        #expect(empty.error.contains("standard input was empty"))
        let dash = try coffer(["item", "add", "--service", "s", "--account", "a", "--value-file", "-"], input: "")
        #expect(dash.status == 1)
        let file = try keyFile("empty", [])
        let fromFile = try coffer(["item", "add", "--service", "s", "--account", "a", "--value-file", file])
        #expect(fromFile.status == 1)
        #expect(fromFile.error.contains("is empty"))
        #expect(try coffer(["item", "get", "--service", "s", "--account", "a"]).status == 1)
        #expect(try coffer(["item", "add", "--service", "s", "--account", "a"], input: "secret").status == 0)
        let update = try coffer(["item", "update", "--service", "s", "--account", "a", "--value-file", "-"], input: "")
        #expect(update.status == 1)
        #expect(try coffer(["item", "get", "--service", "s", "--account", "a"]).output == "secret")
        #expect(try coffer(["item", "add", "--service", "e", "--account", "a", "--value", ""]).status == 0)
    }
}
