import Coffer
import Foundation

/// `coffer init`: creates a vault.
enum InitCommand {
    static let spec = CommandSpec(
        name: "init",
        abstract: "Create a new vault.",
        discussion: """
            Creates an empty vault in the --vault directory (which must be absent or empty), protected by
            the passphrase. Afterwards, run 'coffer key export' and keep the recovery key offline: it is
            the only way in if the passphrase is lost.
            """,
        options: [
            .option(
                "kdf",
                value: "COST",
                help: "Passphrase key-derivation cost: standard (default, ~0.15 s) or strong (~0.6 s)."
            )
        ],
        run: run
    )

    static func run(_ invocation: Invocation) throws {
        var configuration = Vault.Configuration()
        switch invocation.value("kdf") ?? "standard" {
        case "standard": configuration.kdf = .standard
        case "strong": configuration.kdf = .strong
        case let other:
            throw UsageError(
                message: "unknown --kdf '\(other)'; use standard or strong",
                commandPath: invocation.commandPath
            )
        }
        let directory = try CofferCommand.vaultDirectory(invocation)
        let passphrase = try SecretSource.passphrase.passphrase(invocation, confirm: true)
        let vault = try Vault.create(at: directory, passphrase: passphrase, configuration: configuration)
        defer { vault.close() }
        let summary = Summary(
            path: directory.path,
            vaultID: vault.id,
            deviceID: vault.deviceID,
            syncGroupID: vault.syncGroupID,
            formatVersion: vault.formatVersion
        )
        if invocation.flag("json") {
            try invocation.console.printJSON(summary)
        } else {
            invocation.console.print("Created vault \(vault.id.uuidString) at \(directory.path)")
            if !invocation.flag("quiet") {
                invocation.console.message("Next: run 'coffer key export' and keep the recovery key somewhere offline.")
            }
        }
    }

    struct Summary: Encodable {
        let path: String
        let vaultID: UUID
        let deviceID: UUID
        let syncGroupID: UUID
        let formatVersion: Int
    }
}
