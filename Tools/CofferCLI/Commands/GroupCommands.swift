import Coffer
import Foundation

/// `coffer devices`, `coffer group …`, `coffer device approve|revoke`: the sync group's members and
/// the key epochs that shut revoked devices out.
enum GroupCommands {
    static let devices = CommandSpec(
        name: "devices",
        abstract: "List the sync group's devices: id, name, when added and by whom, last seen, revoked.",
        discussion: """
            Reads the group's membership log as this vault holds it (every bundle carries the exporter's
            log, and every import merges it). Works locked; a vault made by an older Coffer that never
            exported since lists itself alone.
            """,
        examples: [
            "coffer devices                          # the group's devices, revoked ones marked",
            "coffer devices --json",
        ],
        run: listDevices
    )

    static let group = CommandSpec(
        name: "group",
        abstract: "Change the sync group: rotate its key, or set how devices may join.",
        subcommands: [
            CommandSpec(
                name: "rotate",
                abstract: "Start a new key epoch: a fresh group key sealed to every member.",
                discussion: """
                    Records written from now on (items, blobs, chunks, snapshots, bundles, remote heads)
                    are sealed under the new key; older ones stay readable under theirs. For hygiene, or
                    after a suspected leak of a member's vault and passphrase: revoke that device instead
                    if you know which one. Other members take the new epoch from the next bundle or pull.
                    """,
                examples: [
                    "coffer group rotate",
                    "coffer group rotate && coffer push s3://bucket/group",
                ],
                run: rotate
            ),
            CommandSpec(
                name: "set",
                abstract: "Set how new devices may join the group.",
                discussion: """
                    --join approval: only a device a member approves joins ('coffer init --request-join',
                    then 'coffer device approve'); bundles carry no passphrase-wrapped group key, so a
                    leaked bundle and a guessed passphrase give nothing. --join passphrase: a device may
                    also join with a member's passphrase and any of its bundles (the default; revoking a
                    device sets approval, since the revoked device may know a passphrase). Setting
                    passphrase needs this vault's passphrase.
                    """,
                options: [
                    .option("join", value: "POLICY", help: "approval or passphrase.")
                ],
                examples: [
                    "coffer group set --join approval",
                    "coffer group set --join passphrase",
                ],
                run: setPolicy
            ),
        ],
        examples: [
            "coffer group rotate                        # a new key epoch",
            "coffer group set --join approval          # new devices need an approval",
        ]
    )

    static let approve = CommandSpec(
        name: "approve",
        abstract: "Approve a device's join request: add it to the group and seal the group key to it.",
        discussion: """
            REQUEST is the file 'coffer init --request-join' wrote on the other device ('-' for standard
            input). Compare the fingerprint shown here with the one the other device showed: a request
            swapped on its way has another. On a terminal you are asked to confirm; otherwise pass --yes.
            The device joins when it imports any bundle this vault exports afterwards (or pulls from the
            group's remote after this vault pushes).
            """,
        options: [.flag("yes", help: "Approve without asking (after comparing the fingerprint).")],
        arguments: [ArgumentSpec("REQUEST", help: "The join request file, or - for standard input.")],
        examples: [
            "coffer device approve request.txt        # shows the fingerprint and asks",
            "coffer device approve request.txt --yes  # fingerprint compared already",
        ],
        run: approveRequest
    )

    static let revoke = CommandSpec(
        name: "revoke",
        abstract: "Revoke a device: shut it out of every record written from now on.",
        discussion: """
            DEVICE is a device id (or a unique prefix of one) or a unique name, as 'coffer devices'
            shows. The revocation is appended to the membership log, passphrase joins are turned off
            (the device may know a passphrase: change passphrases, then 'coffer group set --join
            passphrase' if you want them back), and a new key epoch starts, sealed to the remaining
            devices only. The revoked device keeps what it already had; bundles it makes afterwards
            are refused by every member, and when it syncs again it is told it was revoked.
            """,
        arguments: [ArgumentSpec("DEVICE", help: "The device id, an id prefix, or its name.")],
        examples: [
            "coffer device revoke 3f9c2a71              # by id prefix (coffer devices)",
            "coffer device revoke 3f9c2a71 && coffer push s3://bucket/group",
        ],
        run: revokeDevice
    )

    static func listDevices(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlockingIfGiven(invocation)
        defer { vault.close() }
        let members = try vault.members()
        if invocation.flag("json") {
            try invocation.console.printJSON(members.map(MemberJSON.init))
            return
        }
        if let request = try vault.pendingJoinRequest() {
            invocation.console.message(
                "This vault is waiting for approval to join a sync group (fingerprint \(request.identity.fingerprint)): "
                    + "a member runs 'coffer device approve' with its join request, then this vault imports a bundle "
                    + "that member exports (or pulls from the group's remote)."
            )
            return
        }
        let names = Dictionary(members.map { ($0.deviceID, $0.name) }) { first, _ in first }
        for member in members {
            let adder =
                member.addedBy == member.deviceID ? "itself" : names[member.addedBy] ?? member.addedBy.uuidString
            var line =
                "\(member.deviceID.uuidString.lowercased())  \(PrintableText.escaping(member.name))"
                + (member.isThisDevice ? " (this device)" : "")
                + "  added \(Self.day(member.added)) by \(PrintableText.escaping(adder))"
            if let seen = member.lastSeen { line += ", last seen \(Self.day(seen))" }
            if let revoked = member.revoked {
                line += ", REVOKED \(Self.day(revoked))"
                if let by = member.revokedBy { line += " by \(PrintableText.escaping(names[by] ?? by.uuidString))" }
            }
            invocation.console.print(line)
        }
        if !invocation.flag("quiet") {
            invocation.console.message(
                "\(members.filter(\.isActive).count) active, \(members.filter { !$0.isActive }.count) revoked; "
                    + "new devices join by \(try vault.joinPolicy().rawValue)"
            )
        }
    }

    static func approveRequest(_ invocation: Invocation) throws {
        let path = invocation.arguments[0]
        let data: Data
        if path == "-" {
            data = invocation.console.readStandardInput()
        } else {
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw CLIFailure("cannot read the join request \(path): \(error.localizedDescription)")
            }
        }
        let request = try JoinRequest(text: String(decoding: data, as: UTF8.self))
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        invocation.console.message(
            """
            Join request from device \(request.identity.deviceID.uuidString.lowercased()) named \
            '\(PrintableText.escaping(request.name))'
            Fingerprint: \(request.identity.fingerprint)
            """
        )
        if !invocation.flag("yes") {
            guard let answer = invocation.console.ask("Does the other device show this fingerprint? Approve it [y/N]: ")
            else {
                throw CLIFailure(
                    "not approved: compare the fingerprint with the one the other device shows, then run again with --yes"
                )
            }
            guard ["y", "yes"].contains(answer.lowercased().trimmingCharacters(in: .whitespaces)) else {
                throw CLIFailure("not approved; nothing changed")
            }
        }
        try report(
            try vault.approve(request),
            "Approved device",
            next: "Next: export a bundle (or push) from this vault; the device joins when it imports it (or pulls).",
            invocation
        )
    }

    /// Prints what happened to `member` (as JSON with --json), then `next` unless quiet.
    private static func report(_ member: GroupMember, _ done: String, next: String, _ invocation: Invocation) throws {
        if invocation.flag("json") {
            try invocation.console.printJSON(MemberJSON(member))
            return
        }
        invocation.console.print(
            "\(done) \(member.deviceID.uuidString.lowercased()) ('\(PrintableText.escaping(member.name))')."
        )
        if !invocation.flag("quiet") { invocation.console.message(next) }
    }

    static func revokeDevice(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        let member = try find(invocation.arguments[0], in: try vault.members())
        try vault.revoke(device: member.deviceID)
        try report(
            try vault.members().first { $0.deviceID == member.deviceID } ?? member,
            "Revoked device",
            next: "A new key epoch started for the remaining devices, and new devices now join by approval only. "
                + "Export or push so the other devices take the new epoch.",
            invocation
        )
    }

    static func rotate(_ invocation: Invocation) throws {
        let vault = try CofferCommand.openUnlocked(invocation)
        defer { vault.close() }
        try vault.rotateGroupKey()
        invocation.console.print("Started a new key epoch; export or push so the other devices take it.")
    }

    static func setPolicy(_ invocation: Invocation) throws {
        guard let text = invocation.value("join") else {
            throw UsageError(message: "give --join approval or --join passphrase", commandPath: invocation.commandPath)
        }
        guard let policy = GroupJoinPolicy(rawValue: text) else {
            throw UsageError(
                message: "unknown --join '\(text)'; use approval or passphrase",
                commandPath: invocation.commandPath
            )
        }
        let passphrase = try SecretSource.passphrase.passphrase(invocation)
        let vault = try Vault.open(at: try CofferCommand.vaultDirectory(invocation))
        defer { vault.close() }
        try vault.unlock(passphrase: passphrase)
        try vault.setJoinPolicy(policy, passphrase: policy == .passphrase ? passphrase : nil)
        invocation.console.print("New devices now join by \(policy.rawValue).")
    }

    /// The member `text` names: its id, a unique id prefix, or a unique name.
    static func find(_ text: String, in members: [GroupMember]) throws -> GroupMember {
        let lowered = text.lowercased()
        if let exact = members.first(where: { $0.deviceID.uuidString.lowercased() == lowered }) { return exact }
        let byPrefix = members.filter { $0.deviceID.uuidString.lowercased().hasPrefix(lowered) }
        let byName = members.filter { $0.name == text }
        let found = byPrefix.count == 1 ? byPrefix : byName
        guard found.count == 1 else {
            throw CLIFailure(
                found.isEmpty && byPrefix.isEmpty
                    ? "no device of the group is '\(text)'; see coffer devices"
                    : "'\(text)' names more than one device; give more of its id (see coffer devices)"
            )
        }
        return found[0]
    }

    static func day(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// A member as `coffer devices --json` prints it.
    struct MemberJSON: Encodable {
        let deviceID: String
        let name: String
        let fingerprint: String
        let added: Date
        let addedBy: String
        let lastSeen: Date?
        let revoked: Date?
        let revokedBy: String?
        let isActive: Bool
        let isThisDevice: Bool

        init(_ member: GroupMember) {
            deviceID = member.deviceID.uuidString.lowercased()
            name = member.name
            fingerprint = member.identity.fingerprint
            added = member.added
            addedBy = member.addedBy.uuidString.lowercased()
            lastSeen = member.lastSeen
            revoked = member.revoked
            revokedBy = member.revokedBy?.uuidString.lowercased()
            isActive = member.isActive
            isThisDevice = member.isThisDevice
        }
    }
}
