import Coffer
import Foundation

/// Where the CLI gets passphrases and recovery keys: a file named by an option, else an environment
/// variable, else a no-echo prompt on the terminal, else a clear error saying how to provide one.
struct SecretSource {
    /// The option naming a file, e.g. `passphrase-file`, for messages (the command reads its value).
    let fileOption: String
    /// The environment variable, e.g. `COFFER_PASSPHRASE`.
    let environmentVariable: String
    /// The prompt for the terminal.
    let prompt: String
    /// Whether one trailing newline of a file is not part of the secret (as `echo secret > file`
    /// adds one). Passphrases drop it themselves (``Passphrase/init(utf8:)``).
    var dropsFileNewline = false
    /// What the secret is, for messages: `passphrase`, `recovery key`.
    var what: String { Self.describe(prompt) }

    /// The prompt without its colon, with a capital first letter lowered unless the word is an
    /// acronym (`RNCryptor password`).
    static func describe(_ prompt: String) -> String {
        let text = prompt.trimmingCharacters(in: CharacterSet(charactersIn: ": "))
        guard let first = text.first, text.dropFirst().first?.isLowercase == true else { return text }
        return first.lowercased() + text.dropFirst()
    }

    static let passphrase = passphrase(prompt: "Passphrase: ")
    /// `init --join BUNDLE`: the bundle's vault's passphrase, which then protects the new vault too.
    static let bundlePassphrase = passphrase(prompt: "Passphrase of the vault that exported the bundle: ")
    /// `init --join s3://…`: the passphrase the group's vaults share.
    static let groupPassphrase = passphrase(prompt: "Passphrase of the vaults that push there: ")

    /// The vault passphrase (`--passphrase-file`, `$COFFER_PASSPHRASE`), asked for with `prompt`.
    static func passphrase(prompt: String) -> SecretSource {
        SecretSource(fileOption: "passphrase-file", environmentVariable: "COFFER_PASSPHRASE", prompt: prompt)
    }

    static let rncryptorPassword = SecretSource(
        fileOption: "rncryptor-password-file",
        environmentVariable: "COFFER_RNCRYPTOR_PASSWORD",
        prompt: "RNCryptor password: ",
        dropsFileNewline: true
    )
    static let newPassphrase = SecretSource(
        fileOption: "new-passphrase-file",
        environmentVariable: "COFFER_NEW_PASSPHRASE",
        prompt: "New passphrase: "
    )

    /// Whether a secret is available without asking (a file option or the environment variable).
    func isProvided(file: String?, _ context: CommandContext) -> Bool {
        file != nil || context.environment[environmentVariable] != nil
    }

    /// Reads the secret's bytes, exactly as given (not decoded as text): from `file` (the value of
    /// ``fileOption``), else the environment variable, else a no-echo prompt on the terminal, even
    /// when standard input is a pipe (``Console/canAskOnTerminal``).
    ///
    /// - Parameter confirm: On a terminal, ask twice and require the same answer (for new secrets).
    func read(file: String?, _ context: CommandContext, confirm: Bool = false) throws -> [UInt8] {
        if let path = file {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIFailure("cannot read --\(fileOption) '\(path)': no such readable file")
            }
            var bytes = Array(data)
            if dropsFileNewline, bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
            return bytes
        }
        if let value = context.environment[environmentVariable] {
            // A secret is bytes, from the environment as from a file (docs/FORMAT.md, "Keys"): the
            // process's own bytes, unless the command was given another environment than the process's.
            if let raw = context.console.processEnvironmentBytes(environmentVariable),
                String(decoding: raw, as: UTF8.self) == value
            {
                return raw
            }
            return Array(value.utf8)
        }
        guard context.console.canAskOnTerminal, let first = context.console.readSecret(prompt: prompt) else {
            throw CLIFailure(
                "no \(what) given: set \(environmentVariable), pass --\(fileOption) FILE, or run in a terminal to be asked"
            )
        }
        if confirm {
            guard let second = context.console.readSecret(prompt: "Repeat to confirm: "), second == first else {
                throw CLIFailure("the two entries differ; nothing was changed")
            }
        }
        return first
    }

    /// Unlocks `vault` with the passphrase. Bytes that are not UTF-8 are the passphrase exactly; a
    /// vault whose passphrase an earlier Coffer set from such a file (decoding it lossily) still opens
    /// with that file, with a warning to set the passphrase again. Returns the passphrase that opened
    /// it.
    @discardableResult
    func unlock(_ vault: Vault, file: String?, _ context: CommandContext) throws -> Passphrase {
        var bytes = try read(file: file, context)
        defer { bytes.wipe() }
        let passphrase = Passphrase(utf8: bytes)
        let legacy: Passphrase
        do {
            try vault.unlock(passphrase: passphrase)
            return passphrase
        } catch {
            let wrong = error
            guard wrong.code == .authFailed, let lossy = Passphrase.legacyLossy(bytes) else { throw wrong }
            do {
                try vault.unlock(passphrase: lossy)
            } catch {
                throw wrong
            }
            legacy = lossy
        }
        context.output.warning(
            "warning: this \(what) is not UTF-8 text, and an earlier Coffer read it lossily when the passphrase was set (other such files open the vault too); run coffer passwd to set it again"
        )
        return legacy
    }

    /// Reads a passphrase.
    ///
    /// - Parameter confirm: It is a new passphrase: on a terminal it is asked twice, and a weak one
    ///   draws a warning (it is still accepted: the choice is the user's).
    func passphrase(file: String?, _ context: CommandContext, confirm: Bool = false) throws -> Passphrase {
        var bytes = try read(file: file, context, confirm: confirm)
        defer { bytes.wipe() }
        if confirm, let warning = Self.weakness(of: bytes) { context.output.warning("coffer: warning: \(warning)") }
        return Passphrase(utf8: bytes)
    }

    /// The shortest passphrase that draws no warning: about 60 bits even as lowercase letters.
    static let recommendedLength = 12

    /// Why a new passphrase is weak, or `nil`: anyone holding a copy of the vault can try guesses
    /// offline, as fast as the key derivation allows.
    static func weakness(of bytes: [UInt8]) -> String? {
        let characters = String(decoding: bytes, as: UTF8.self).count
        guard characters < recommendedLength || Set(bytes).count < 4 else { return nil }
        return
            "this passphrase is weak (\(characters) character\(characters == 1 ? "" : "s")\(Set(bytes).count < 4 && characters >= recommendedLength ? ", few distinct ones" : "")): anyone with a copy of the vault can try guesses offline; use \(recommendedLength) or more, e.g. four random words (coffer passwd changes it)"
    }
}

/// A command failure that is not a usage mistake: printed as `coffer: error: …`, exit status 1.
struct CLIFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}

/// A command that did its work only in part (a backup that could not read every path): its output
/// is printed, then the message, and `coffer` exits 3, as restic does for an incomplete snapshot.
struct IncompleteResult: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
