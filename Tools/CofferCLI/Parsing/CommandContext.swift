import Coffer
import Foundation

/// What a running command is given besides its own options: the global options, the one ``Output``
/// they decide, the console and the environment, and the ways to reach the vault.
struct CommandContext: Sendable {
    /// `--vault`, `--passphrase-file`, `--json`, `--quiet`.
    let global: GlobalOptions
    /// How results, notes and warnings are shown.
    let output: Output
    /// Where output goes and prompts are asked.
    let console: Console
    /// The process environment.
    let environment: [String: String]
    /// The command's path from the root, e.g. `["coffer", "item", "get"]`, for usage errors.
    let commandPath: [String]

    init(invocation: Invocation, global: GlobalOptions) {
        self.global = global
        output = Output(mode: global.json ? .json : global.quiet ? .quiet : .text, console: invocation.console)
        console = invocation.console
        environment = invocation.environment
        commandPath = invocation.commandPath
    }

    /// A usage error in this command (exit 64), naming its help.
    func usageError(_ message: String) -> UsageError {
        UsageError(message: message, commandPath: commandPath)
    }

    /// The vault directory: `--vault`, else `$COFFER_VAULT`, else `~/.local/share/coffer/default`.
    func vaultDirectory() throws -> URL {
        if let path = global.vault ?? environment["COFFER_VAULT"], !path.isEmpty {
            return URL(fileURLWithPath: path).standardizedFileURL
        }
        guard let home = environment["HOME"], !home.isEmpty else {
            throw CLIFailure("no vault given and $HOME is not set: pass --vault DIR or set COFFER_VAULT")
        }
        return URL(fileURLWithPath: home).appendingPathComponent(".local/share/coffer/default")
    }

    /// Opens the vault for a write-only client: never unlocked, its write key expected to be
    /// `expectedKey` (`--write-key`, `$COFFER_WRITE_KEY`), else the one pinned for the vault, else
    /// pinned now (trust on first use, said on standard error). Pins are kept per directory and vault
    /// id: another vault at a pinned directory is refused unless `repin` says to pin it instead.
    private func openWriteOnly(configuration: Vault.Configuration, expectedKey: String?, repin: Bool) throws -> Vault {
        var configuration = configuration
        let directory = try vaultDirectory()
        let path = directory.resolvingSymlinksInPath().path
        let probe = try Vault.open(at: directory, configuration: configuration)
        let vaultID = probe.id
        let id = vaultID.uuidString.lowercased()
        let current = try? probe.writeKeyFingerprint
        probe.close()
        let pins = try WriteKeyPins(self)
        let atPath = try pins.pin(at: path)
        if let atPath, atPath.vault != id, !repin {
            throw CLIFailure(
                "the vault at \(path) is not the one this client pinned there: it is vault \(id), the pin is for vault \(atPath.vault) (write key \(atPath.fingerprint)). Another vault was put at that path; nothing was written. If it was replaced on purpose, compare its write key with 'coffer write-only status' on the owner's side and run again with --repin"
            )
        }
        let pinned = atPath?.vault == id ? atPath : try pins.pin(for: vaultID)
        if let expected = expectedKey ?? environment["COFFER_WRITE_KEY"].flatMap({ $0.isEmpty ? nil : $0 }) {
            configuration.expectedWriteKeyFingerprint = expected
            // Re-pinning with the key given: the directory is pinned to the new vault and that key.
            if repin, atPath?.vault != id { try pins.pin(expected, for: vaultID, at: path) }
        } else if let pinned {
            configuration.expectedWriteKeyFingerprint = pinned.fingerprint
            // The same vault reached at another directory: that directory is pinned to it too.
            if atPath != pinned, current == pinned.fingerprint {
                try pins.pin(pinned.fingerprint, for: vaultID, at: path)
            }
        } else if let current {
            try pins.pin(current, for: vaultID, at: path)
            output.note(
                "Trusting write key \(current) of vault \(id) at \(path) from now on (pinned in \(pins.file.path); compare it with 'coffer write-only status' on the owner's side)."
            )
            configuration.expectedWriteKeyFingerprint = current
        }
        return try Vault.open(at: directory, configuration: configuration)
    }

    /// Opens the vault as `access` says, locking itself after `autoLockAfter` idle if given; the
    /// caller closes it.
    func openVault(_ access: VaultAccess, autoLockAfter: Duration? = nil) throws -> Vault {
        var configuration = Vault.Configuration()
        configuration.autoLockInterval = autoLockAfter
        if let text = environment["COFFER_MAX_CLOCK_SKEW"], !text.isEmpty {
            guard let seconds = Int64(text), seconds >= 0 else {
                throw CLIFailure("COFFER_MAX_CLOCK_SKEW is '\(text)'; give a whole number of seconds (default 600)")
            }
            configuration.maximumClockSkew = .seconds(seconds)
        }
        let holder = VaultHolder()
        if access == .unlockedAskingForPresence {
            configuration.authenticationHandler = { [console] request in
                guard let vault = holder.vault, console.inputIsTerminal,
                    var answer = console.readSecret(prompt: "Passphrase to \(request.reason): ")
                else { return .canceled }
                defer { answer.wipe() }
                do {
                    try vault.unlock(passphrase: Passphrase(utf8: answer))
                    return .granted
                } catch {
                    return .failed
                }
            }
        }
        if case .writeOnly(let expected, let repin) = access {
            return try openWriteOnly(configuration: configuration, expectedKey: expected, repin: repin)
        }
        let vault = try Vault.open(at: try vaultDirectory(), configuration: configuration)
        holder.vault = vault
        do {
            try attachOffloadStore(vault)
        } catch {
            output.warning("warning: the object store this vault offloaded content to is not attached: \(error)")
        }
        switch access {
        case .locked, .writeOnly: return vault
        case .unlockedIfPassphraseGiven where !SecretSource.passphrase.isProvided(file: global.passphraseFile, self):
            return vault
        default: break
        }
        do {
            try SecretSource.passphrase.unlock(vault, file: global.passphraseFile, self)
        } catch {
            vault.close()
            throw error
        }
        return vault
    }

    /// Attaches the object store the vault offloaded content to, with the environment's credentials
    /// and endpoint as the vault remembers it. Without credentials nothing is attached, and reads of
    /// offloaded content say what is missing.
    private func attachOffloadStore(_ vault: Vault) throws {
        guard let location = try vault.offloadLocation,
            let credentials = try? S3Credentials.fromEnvironment(environment)
        else { return }
        let remote = S3Remote(
            try S3Location(location),
            credentials: credentials,
            endpoint: try vault.offloadEndpoint,
            region: try vault.offloadRegion
        )
        try vault.attachObjectStore(remote)
    }

    /// The vault passphrase (`--passphrase-file`, `$COFFER_PASSPHRASE`, else asked with `source`'s
    /// prompt).
    ///
    /// - Parameter confirm: It is a new passphrase: asked twice, and a weak one draws a warning.
    func passphrase(_ source: SecretSource = .passphrase, confirm: Bool = false) throws -> Passphrase {
        try source.passphrase(file: global.passphraseFile, self, confirm: confirm)
    }

    /// A progress bar on standard error, drawn in text mode on a terminal.
    func progressBar(_ label: String, total: Int64?, unit: ProgressBar.Unit = .bytes) -> ProgressBar {
        ProgressBar(label: label, total: total, unit: unit, console: console, enabled: output.isChatty)
    }
}

/// Lets the authentication handler reach the vault it was configured into.
final class VaultHolder: @unchecked Sendable {
    var vault: Vault?
}
