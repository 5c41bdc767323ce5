import Coffer
import Foundation

/// The device fingerprints a write-only client trusts, one per vault directory and vault id: pinned the
/// first time the client writes to a vault (as SSH pins a host key), or given with `--write-key` /
/// `$COFFER_WRITE_KEY`. A vault whose write keys are later signed by another device key is refused
/// before anything is written, and so is another vault put at a pinned directory (its id differs)
/// unless the client re-pins deliberately (`--repin`).
///
/// The file (`$COFFER_WRITE_KEY_PINS`, else `$XDG_CONFIG_HOME/coffer/write-key-pins`, else
/// `~/.config/coffer/write-key-pins`) holds lines `VAULT-ID FINGERPRINT PATH` (the path is the rest of
/// the line; older lines `VAULT-ID FINGERPRINT` name no path); it holds no secret.
struct WriteKeyPins {
    let file: URL

    init(_ context: CommandContext) throws {
        if let path = context.environment["COFFER_WRITE_KEY_PINS"], !path.isEmpty {
            file = URL(fileURLWithPath: path)
        } else if let config = context.environment["XDG_CONFIG_HOME"], !config.isEmpty {
            file = URL(fileURLWithPath: config).appendingPathComponent("coffer/write-key-pins")
        } else if let home = context.environment["HOME"], !home.isEmpty {
            file = URL(fileURLWithPath: home).appendingPathComponent(".config/coffer/write-key-pins")
        } else {
            throw CLIFailure(
                "a write-only client pins the vault's write key, but $HOME is not set: set COFFER_WRITE_KEY_PINS to a file, or give --write-key FINGERPRINT"
            )
        }
    }

    /// One pin: a vault's id, its write key's fingerprint, and the directory it was pinned at (none in
    /// lines written before pins named paths).
    struct Pin: Equatable {
        let vault: String
        let fingerprint: String
        let path: String?
    }

    /// The pin recorded for the directory `path`, whatever vault it names.
    func pin(at path: String) throws -> Pin? {
        try entries().last { $0.path == path }
    }

    /// The pin recorded for `vault` (at any directory), if any.
    func pin(for vault: UUID) throws -> Pin? {
        let id = vault.uuidString.lowercased()
        return try entries().last { $0.vault == id }
    }

    /// Pins `fingerprint` for `vault` at the directory `path`, replacing any pin of that directory.
    func pin(_ fingerprint: String, for vault: UUID, at path: String) throws {
        guard !path.contains("\n") else {
            throw CLIFailure("a vault directory whose path holds a line break cannot be pinned; move or rename it")
        }
        var lines = try entries().filter { $0.path != path }.map(Self.line)
        lines.append(Self.line(Pin(vault: vault.uuidString.lowercased(), fingerprint: fingerprint, path: path)))
        do {
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file, options: .atomic)
        } catch {
            throw CLIFailure("cannot record the vault's write key in \(file.path): \(error.localizedDescription)")
        }
    }

    private static func line(_ pin: Pin) -> String {
        [pin.vault, pin.fingerprint, pin.path].compactMap { $0 }.joined(separator: " ")
    }

    private func entries() throws -> [Pin] {
        guard FileManager.default.fileExists(atPath: file.path) else { return [] }
        guard let text = try? String(contentsOf: file, encoding: .utf8) else {
            throw CLIFailure("cannot read the pinned write keys in \(file.path); fix or remove it")
        }
        var pins: [Pin] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count >= 2 else {
                throw CLIFailure(
                    "\(file.path) has a line that is not 'VAULT-ID FINGERPRINT PATH': '\(line)'; fix or remove it"
                )
            }
            pins.append(
                Pin(
                    vault: fields[0].lowercased(),
                    fingerprint: String(fields[1]),
                    path: fields.count == 3 ? String(fields[2]) : nil
                )
            )
        }
        return pins
    }
}
