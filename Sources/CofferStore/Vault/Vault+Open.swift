public import Foundation
internal import Glibc

// Opening a vault: checks of the data file, LMDB's open, then the identity record.
extension Vault {
    /// Opens the vault in `directory`, locked. Nothing in the directory is changed, whatever the outcome.
    ///
    /// Reader slots left by crashed processes are cleared.
    ///
    /// - Throws: ``CofferError`` `.vaultNotFound` if there is no such directory, `.notAVault` if it
    ///   holds no vault or something else, `.unsupportedFormat` for a vault of a newer format, `.decode`
    ///   for a damaged one.
    public static func open(
        at directory: URL,
        configuration: Configuration = Configuration()
    ) throws(CofferError) -> Vault {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) else {
            throw CofferError(
                .vaultNotFound,
                "there is no vault at \(directory.path)"
            )
        }
        guard isDirectory.boolValue else {
            throw CofferError(.notAVault, "\(directory.path) is a file, not a vault directory")
        }
        try refuseIrregularFiles(in: directory)
        try refuseDamagedDataFile(in: directory)
        let environment: Environment
        do {
            environment = try Environment(
                directory: directory,
                options: Environment.Options(initialMapSize: configuration.initialMapSize)
            )
        } catch {
            switch error.code {
            case .noSuchFile:
                throw CofferError(
                    .notAVault,
                    "\(directory.path) is not a Coffer vault (it has no data.mdb)",
                    underlying: error
                )
            case .invalid, .versionMismatch:
                throw CofferError(
                    .notAVault,
                    "\(directory.path) is not a Coffer vault (data.mdb is not a database Coffer can read)",
                    underlying: error
                )
            case .permissionDenied, .readOnlyFileSystem:
                throw CofferError(
                    .io,
                    "cannot open the vault at \(directory.path) for writing (\(error.code)): Coffer writes to its "
                        + "data.mdb and lock.mdb even to read (readers are recorded in lock.mdb); give this user "
                        + "write access to the directory and both files, or copy the vault somewhere writable",
                    underlying: error
                )
            default:
                throw CofferError.wrapping(error, while: "opening \(directory.path)")
            }
        }
        do {
            let (schema, identity) = try readIdentity(environment)
            return Vault(
                directory: directory,
                configuration: configuration,
                environment: environment,
                schema: schema,
                identity: identity,
                keys: KeyRing()
            )
        } catch {
            environment.closeAndRemoveCreatedFiles()
            throw error
        }
    }

    private static func readIdentity(_ environment: Environment) throws(CofferError) -> (Schema, VaultIdentity) {
        let notAVault = CofferError(
            .notAVault,
            "\(environment.directory.path) is an LMDB database but not a Coffer vault"
        )
        do {
            _ = try environment.openTables(["meta"], create: false)
        } catch LMDBError.Code.notFound {
            throw notAVault
        } catch {
            throw CofferError.wrapping(error, while: "opening the vault")
        }
        let schema: Schema
        do {
            schema = try Schema(environment: environment, create: false)
        } catch let error as LMDBError where error.code == .notFound {
            throw CofferError(
                .decode,
                "the vault is damaged: a table is missing (\(error.operation))",
                underlying: error
            )
        } catch {
            throw CofferError.wrapping(error, while: "opening the vault's tables")
        }
        let entries: [String: [UInt8]] = try storage("reading the vault's identity") {
            try environment.read { txn in
                var entries: [String: [UInt8]] = [:]
                for name in VaultIdentity.metaNames { entries[name] = try txn.get(schema.meta, key: Array(name.utf8)) }
                return entries
            }
        }
        guard
            let identity = try VaultIdentity(
                metaEntries: entries,
                directory: environment.directory.path,
                readableVersion: Schema.formatVersion
            )
        else { throw notAVault }
        return (schema, identity)
    }
}
