/// A command or option a message tells people to use, named for the ``MessageAudience`` of this
/// process: `` `coffer verify` `` at the command line, `` `vault.blobs.verify()` `` in an app;
/// `` `--host NAME` `` or `` `host:` ``. Messages interpolate it, `"… a chunk is missing; \(run: .verify)"`,
/// and never spell a command or option themselves: an app's users cannot type `coffer`, and the
/// command line's cannot call Swift.
package struct InterfaceName: Sendable, CustomStringConvertible {
    /// The `coffer` command or option, e.g. `coffer verify --read-data`.
    package let command: String
    /// The library call or parameter, e.g. `vault.blobs.verify(readingData: true)`.
    package let call: String

    /// A command or option named both ways.
    package init(command: String, call: String) {
        self.command = command
        self.call = call
    }

    /// The name for this process's audience, in backquotes.
    package var description: String { description(for: .current) }

    /// The name for `audience`, in backquotes.
    package func description(for audience: MessageAudience) -> String {
        audience == .commandLine ? "`\(command)`" : "`\(call)`"
    }

    /// "run `coffer verify`" or "call `vault.blobs.verify()`": the verb each audience uses.
    package func instruction(for audience: MessageAudience = .current) -> String {
        (audience == .commandLine ? "run " : "call ") + description(for: audience)
    }
}

extension InterfaceName {
    /// Checks every record and chunk's presence.
    package static let verify = InterfaceName(command: "coffer verify", call: "vault.blobs.verify()")
    /// Checks every record and reads every chunk.
    package static let verifyReadingData = InterfaceName(
        command: "coffer verify --read-data",
        call: "vault.blobs.verify(readingData: true)"
    )
    /// Frees chunks nothing refers to.
    package static let collectGarbage = InterfaceName(command: "coffer gc", call: "vault.blobs.collectGarbage()")
    /// Gives the device new keys (and the group new identity keys for it).
    package static let rekey = InterfaceName(command: "coffer rekey", call: "vault.rekey(passphrase:)")
    /// Mends the data file's meta pages.
    package static let repair = InterfaceName(command: "coffer repair", call: "Vault.repairDataFile(at:)")
    /// Mends the data file, losing the transactions it cannot recover.
    package static let repairAcceptingLoss = InterfaceName(
        command: "coffer repair --accept-loss",
        call: "Vault.repairDataFile(at:acceptingLoss: true)"
    )
    /// Lists the sync group's members.
    package static let members = InterfaceName(command: "coffer devices", call: "vault.members()")
    /// Approves a join request.
    package static let approve = InterfaceName(command: "coffer device approve", call: "vault.approve(_:)")
    /// Revokes a device.
    package static func revoke(_ device: String) -> InterfaceName {
        InterfaceName(command: "coffer device revoke \(device)", call: "vault.revoke(device:)")
    }
    /// Revokes a device, when the message names it elsewhere.
    package static let revokeDevice = InterfaceName(command: "coffer device revoke", call: "vault.revoke(device:)")
    /// Founds a new sync group on this device.
    package static let startNewGroup = InterfaceName(command: "coffer group new", call: "vault.startNewGroup()")
    /// Makes a new vault that asks a member to approve it.
    package static let requestJoin = InterfaceName(
        command: "coffer init --request-join",
        call: "Vault.requestJoin(at:passphrase:group:)"
    )
    /// Makes a new vault from a member's bundle, by passphrase.
    package static let joinFromBundle = InterfaceName(
        command: "coffer init --join",
        call: "Vault.join(bundle:at:passphrase:)"
    )
    /// Imports a bundle file.
    package static let importBundle = InterfaceName(command: "coffer import", call: "vault.import(from:)")
    /// Pushes to the group's remote.
    package static let push = InterfaceName(command: "coffer push", call: "vault.push(to:)")
    /// Pulls from the group's remote.
    package static let pull = InterfaceName(command: "coffer pull", call: "vault.pull(from:)")
    /// Makes the bucket before the first push.
    package static let createBucket = InterfaceName(
        command: "coffer push --create-bucket",
        call: "remote.createBucketIfMissing()"
    )
    /// Compacts the remote into a checkpoint.
    package static let compactRemote = InterfaceName(command: "coffer remote compact", call: "vault.compact(remote:)")
    /// Offloads content to the object store at `location`.
    package static func offload(to location: String) -> InterfaceName {
        InterfaceName(command: "coffer offload \(location)", call: "vault.offloadContent(to:)")
    }
    /// Attaches the object store a vault offloaded to, with credentials that may read it.
    package static let attachObjectStore = InterfaceName(
        command: "AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… coffer COMMAND",
        call: "vault.attachObjectStore(_:)"
    )
    /// Lets write-only clients add to the vault.
    package static let allowWriteOnly = InterfaceName(
        command: "coffer write-only enable",
        call: "vault.allowWriteOnlyClients(true)"
    )
    /// Stores data as a blob.
    package static let putBlob = InterfaceName(command: "coffer put", call: "vault.blobs.write(…)")
    /// Renames a blob.
    package static let renameBlob = InterfaceName(command: "coffer mv", call: "vault.blobs.rename(_:to:)")
    /// Lists the blobs.
    package static let listBlobs = InterfaceName(command: "coffer ls", call: "vault.blobs.list()")
    /// Lists the snapshots.
    package static let listSnapshots = InterfaceName(command: "coffer snapshots", call: "vault.snapshots.list()")
    /// Takes a snapshot of a directory.
    package static let backup = InterfaceName(command: "coffer backup DIR", call: "vault.snapshots.backup(…)")
    /// Adopts a write-only client's snapshot.
    package static func adopt(_ id: String) -> InterfaceName {
        InterfaceName(command: "coffer snapshot adopt \(id)", call: "vault.snapshots.adopt(_:)")
    }
    /// Lists the top of a snapshot.
    package static func listSnapshot(_ id: String) -> InterfaceName {
        InterfaceName(command: "coffer ls \(id)", call: "vault.snapshots.entries(of:)")
    }
}

extension InterfaceName {
    /// The host a snapshot reference is looked up for.
    package static let hostOption = InterfaceName(command: "--host NAME", call: "host:")
    /// The patterns that leave paths out.
    package static let excludeOption = InterfaceName(command: "--exclude", call: "excluding:")
    /// The same, ignoring case.
    package static let excludeIgnoringCaseOption = InterfaceName(
        command: "--iexclude",
        call: "excludingIgnoringCase:"
    )
    /// The patterns that select the paths a restore writes.
    package static let includeOption = InterfaceName(command: "--include", call: "including:")
    /// The same, ignoring case.
    package static let includeIgnoringCaseOption = InterfaceName(
        command: "--iinclude",
        call: "includingIgnoringCase:"
    )
    /// A restore's deleting what the snapshot does not hold.
    package static let restoreDeleting = InterfaceName(command: "--delete", call: "deleting: true")
    /// The keep rules of a retention policy.
    package static let keepRule = InterfaceName(command: "--keep-…", call: "RetentionPolicy")
    /// One keep rule, the smallest.
    package static let keepLastOne = InterfaceName(command: "--keep-last 1", call: "policy.last = 1")
    /// Forgetting one snapshot by id.
    package static let forgetOne = InterfaceName(command: "coffer forget SNAPSHOT", call: "vault.snapshots.forget(_:)")
    /// Writing a record device-bound.
    package static let deviceOnly = InterfaceName(command: "--device-only", call: "scope: .deviceBound")
    /// S3 credentials from a file.
    package static let credentialsFile = InterfaceName(
        command: "--credentials-file",
        call: "S3Credentials(accessKeyID:secretAccessKey:)"
    )
}

extension DefaultStringInterpolation {
    /// Interpolates "run `coffer verify`" or "call `vault.blobs.verify()`" (``InterfaceName/instruction(for:)``).
    package mutating func appendInterpolation(run operation: InterfaceName) {
        appendLiteral(operation.instruction())
    }
}
