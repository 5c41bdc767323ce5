import Coffer
import Foundation

/// The device fingerprints a write-only client trusts, one per vault: pinned the first time the client
/// writes to a vault (as SSH pins a host key), or given with `--write-key` / `$COFFER_WRITE_KEY`. A vault
/// whose write keys are later signed by another device key is refused before anything is written.
///
/// The file (`$COFFER_WRITE_KEY_PINS`, else `$XDG_CONFIG_HOME/coffer/write-key-pins`, else
/// `~/.config/coffer/write-key-pins`) holds lines `VAULT-ID FINGERPRINT`; it holds no secret.
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

    /// The fingerprint pinned for `vault`, if any.
    func pinned(for vault: UUID) throws -> String? {
        try entries()[vault.uuidString.lowercased()]
    }

    /// Pins `fingerprint` for `vault`.
    func pin(_ fingerprint: String, for vault: UUID) throws {
        var lines =
            (try? String(contentsOf: file, encoding: .utf8)).map { $0.split(separator: "\n").map(String.init) } ?? []
        lines.append("\(vault.uuidString.lowercased()) \(fingerprint)")
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

    private func entries() throws -> [String: String] {
        guard FileManager.default.fileExists(atPath: file.path) else { return [:] }
        guard let text = try? String(contentsOf: file, encoding: .utf8) else {
            throw CLIFailure("cannot read the pinned write keys in \(file.path); fix or remove it")
        }
        var entries: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: " ")
            guard fields.count == 2 else {
                throw CLIFailure(
                    "\(file.path) has a line that is not 'VAULT-ID FINGERPRINT': '\(line)'; fix or remove it"
                )
            }
            entries[fields[0].lowercased()] = String(fields[1])
        }
        return entries
    }
}
