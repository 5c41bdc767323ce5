import Coffer
import Foundation

// `coffer devices`, `coffer group rotate|set`, `coffer device approve|revoke`: the sync group's
// members and the key epochs that shut revoked devices out.

/// `coffer devices`: the sync group's devices.
struct DevicesCommand: VaultCommand {
    static let configuration = CommandConfiguration(
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
        ]
    )

    var vaultAccess: VaultAccess { .unlockedIfPassphraseGiven }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let members = try vault.members()
        if context.output.mode != .json, let request = try vault.pendingJoinRequest() {
            return context.output.warning(
                "This vault is waiting for approval to join a sync group (fingerprint \(request.identity.fingerprint)): "
                    + "a member runs 'coffer device approve' with its join request, then this vault imports a bundle "
                    + "that member exports (or pulls from the group's remote)."
            )
        }
        let names = Dictionary(members.map { ($0.deviceID, $0.name) }) { first, _ in first }
        let width = context.console.outputColumns
        try context.output.result(members.map(MemberJSON.init)) {
            members.map { member in
                let adder =
                    member.addedBy == member.deviceID
                    ? "itself" : names[member.addedBy] ?? member.addedBy.uuidString.lowercased()
                let head =
                    "\(member.deviceID.uuidString.lowercased())  \(PrintableText.escaping(member.name))"
                    + (member.isThisDevice ? " (this device)" : "")
                var line = "added \(day(member.added)) by \(PrintableText.escaping(adder))"
                if let seen = member.lastSeen { line += ", last seen \(day(seen))" }
                if let revoked = member.revoked {
                    line += ", REVOKED \(day(revoked))"
                    if let by = member.revokedBy {
                        line +=
                            by == member.deviceID
                            ? " (two rekeys at once: a copy of it rekeyed too)"
                            : " by "
                                + (names[by].map(PrintableText.escaping)
                                    ?? "\(by.uuidString.lowercased()), a device whose own join does not count")
                    }
                }
                // On a terminal too narrow for one line, the history goes under the device, indented.
                guard let width, head.count + 2 + line.count > width else { return head + "  " + line }
                return head + "\n"
                    + WordWrap.wrap(line, width: width - 2).split(separator: "\n").map { "  " + $0 }
                    .joined(separator: "\n")
            }.joined(separator: "\n")
        }
        let policy = try vault.joinPolicy()
        context.output.note(
            "\(members.filter(\.isActive).count) active, \(members.filter { !$0.isActive }.count) revoked; "
                + "new devices join by \(policy.rawValue)"
        )
    }
}

/// `coffer group rotate|set`: changes to the sync group.
struct GroupCommands: CommandGroup {
    static let configuration = CommandConfiguration(
        name: "group",
        abstract: "Change the sync group: rotate its key, set how devices may join, or found a new one.",
        examples: [
            "coffer group rotate                        # a new key epoch",
            "coffer group set --join approval          # new devices need an approval",
            "coffer group new                           # leave the group, found a new one",
        ],
        subcommands: [GroupRotateCommand.self, GroupSetCommand.self, GroupNewCommand.self]
    )
}

/// `coffer group rotate`: a new key epoch.
struct GroupRotateCommand: VaultCommand {
    static let configuration = CommandConfiguration(
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
        ]
    )

    func run(_ vault: Vault, _ context: CommandContext) throws {
        try vault.rotateGroupKey()
        try context.output.result(["rotated": true]) {
            "Started a new key epoch; export or push so the other devices take it."
        }
    }
}

/// `coffer group new`: leave the sync group and found a new one with this device alone.
struct GroupNewCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "new",
        abstract: "Leave the sync group and found a new one, with this device as its only member.",
        discussion: """
            For a device that can no longer trust its group: a thief revoked it while it revoked the
            thief, and no member it trusts is left. The new group has a fresh id, accepts devices by
            approval only, and starts a key epoch only this device holds; it carries the old group keys
            its records need, so they stay readable here and by the devices it approves (not the
            made-up keys a stolen founder may have padded the old log with). Whoever held
            the old group's keys cannot join it. Other devices ask to join with a bundle this vault
            exports ('coffer init --request-join FILE --group BUNDLE'); push to a new store prefix.
            """,
        examples: [
            "coffer group new                              # after a thief revoked this device",
            "coffer group new && coffer export --out group.bundle",
        ]
    )

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let (group, recordsLeftOut) = try vault.foundNewGroup()
        if recordsLeftOut > 0 {
            context.output.warning(
                "\(recordsLeftOut) syncable records are sealed under key epochs past the \(NewGroupKeys.budget) a new group carries (the epochs sealing the fewest records were left out): they can no longer be opened, and no export carries them. So many epochs mean a member's modified client planted records under made-up ones in the old group"
            )
        }
        try context.output.result(group) {
            "Founded sync group \(group.id.uuidString.lowercased()), fingerprint \(group.fingerprint), with this device alone."
        }
        context.output.note(
            "Next: export a bundle for the devices to approve ('coffer init --request-join FILE --group BUNDLE' there, 'coffer device approve FILE' here), and push to a new store prefix."
        )
    }
}

/// `coffer group set --join POLICY`: how new devices may join.
struct GroupSetCommand: VaultCommand {
    static let configuration = CommandConfiguration(
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
        examples: [
            "coffer group set --join approval",
            "coffer group set --join passphrase",
        ]
    )

    @Option(value: "POLICY", help: "approval or passphrase.")
    var join: GroupJoinPolicy?

    func validate() throws {
        if join == nil { throw ValidationError("give --join approval or --join passphrase") }
    }

    /// Opened locked: the passphrase that unlocks it also goes into the group's join block.
    var vaultAccess: VaultAccess { .locked }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let policy = join ?? .approval
        let passphrase = try context.passphrase()
        try vault.unlock(passphrase: passphrase)
        try vault.setJoinPolicy(policy, passphrase: policy == .passphrase ? passphrase : nil)
        try context.output.result(["joinPolicy": policy.rawValue]) { "New devices now join by \(policy.rawValue)." }
    }
}

/// `coffer device approve REQUEST`: lets a device into the group.
struct DeviceApproveCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "approve",
        abstract: "Approve a device's join request: add it to the group and seal the group key to it.",
        discussion: """
            REQUEST is the file 'coffer init --request-join' wrote on the other device ('-' for standard
            input). Compare the fingerprints shown here with the ones the other device showed: a request
            swapped on its way has another device fingerprint, and a request for another group (or made
            from a bundle of a look-alike group) another group fingerprint, and is refused. On a terminal you are asked to confirm; otherwise pass --yes.
            The device joins when it imports any bundle this vault exports afterwards (or pulls from the
            group's remote after this vault pushes).
            """,
        examples: [
            "coffer device approve request.txt        # shows the fingerprint and asks",
            "coffer device approve request.txt --yes  # fingerprint compared already",
        ]
    )

    @Flag(help: "Approve without asking (after comparing the fingerprint).")
    var yes: Bool

    @Argument("REQUEST", help: "The join request file, or - for standard input.")
    var request: String

    func validate() throws {
        if request != "-" { try InputFile.checkReadable(request) }
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let data: Data
        if request == "-" {
            data = context.console.readStandardInput()
        } else {
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: request))
            } catch {
                throw CLIFailure("cannot read the join request \(request): \(error.localizedDescription)")
            }
        }
        let joinRequest = try JoinRequest(text: String(decoding: data, as: UTF8.self))
        let mine = try vault.groupReference()
        context.console.message(
            """
            Join request from device \(joinRequest.identity.deviceID.uuidString.lowercased()) named \
            '\(PrintableText.escaping(joinRequest.name))'
            Fingerprint: \(joinRequest.identity.fingerprint)
            """
        )
        if let asked = joinRequest.group {
            guard asked == mine else {
                throw CLIFailure(
                    "the request asks to join sync group \(asked.description), not this device's group \(mine.description); not approved, nothing changed. Ask the device for a request made with a bundle of this group (coffer init --request-join FILE --group BUNDLE)"
                )
            }
            context.console.message("Group fingerprint: \(mine.fingerprint) (the request names this group)")
        } else {
            context.console.message(
                "warning: the request names no group (made by an older Coffer); compare the device fingerprint with care"
            )
        }
        if !yes {
            guard let answer = context.console.ask("Does the other device show this fingerprint? Approve it [y/N]: ")
            else {
                throw CLIFailure(
                    "not approved: compare the fingerprint with the one the other device shows, then run again with --yes"
                )
            }
            guard ["y", "yes"].contains(answer.lowercased().trimmingCharacters(in: .whitespaces)) else {
                throw CLIFailure("not approved; nothing changed")
            }
        }
        let member = try vault.approve(joinRequest)
        try context.output.result(MemberJSON(member)) { "Approved device \(member.cliDescription)." }
        context.output.note(
            "Next: export a bundle (or push) from this vault; the device joins when it imports it (or pulls)."
        )
    }
}

/// `coffer device revoke DEVICE`: shuts a device out.
struct DeviceRevokeCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "revoke",
        abstract: "Revoke a device: shut it out of every record written from now on.",
        discussion: """
            DEVICE is a device id (or a unique prefix of one) or a unique name, as 'coffer devices'
            shows. The revocation is appended to the membership log, passphrase joins are turned off
            (the device may know a passphrase: change passphrases, then 'coffer group set --join
            passphrase' if you want them back), and a new key epoch starts, sealed to the remaining
            devices only. The revoked device keeps what it already had; bundles it makes afterwards
            are refused by every member, and when it syncs again it is told it was revoked.

            Devices that came in while another member was revoking the same device are revoked with
            it, each named: those that joined with the passphrase at the same time as that revocation
            (which closed passphrase joins), those the device approved then, and the devices those
            admitted. (A stolen device's copy can take in devices of its own and close the door after
            them before the first revocation reaches you; revoking the device yourself shuts them out
            too.)
            """,
        examples: [
            "coffer device revoke 3f9c2a71              # by id prefix (coffer devices)",
            "coffer device revoke 3f9c2a71 && coffer push s3://bucket/group",
        ]
    )

    @Argument("DEVICE", help: "The device id, an id prefix, or its name.")
    var device: String

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let member = try GroupMember.named(device, in: try vault.members())
        let revokedIDs = try vault.revoke(device: member.deviceID)
        let members = try vault.members()
        let revoked = members.first { $0.deviceID == member.deviceID } ?? member
        try context.output.result(MemberJSON(revoked)) { "Revoked device \(revoked.cliDescription)." }
        for companion in revokedIDs.dropFirst() {
            let name = members.first { $0.deviceID == companion }?.cliDescription ?? companion.uuidString
            context.output.warning(
                "Also revoked device \(name): it came in while another member was revoking \(revoked.cliDescription) (it joined with the passphrase at the same time as that revocation, which closed passphrase joins, or was admitted by it or by such a device). If you know this device, approve it again once it makes a new vault."
            )
        }
        guard try !vault.syncGroupIsFrozen() else {
            context.output.warning(
                "warning: a new key epoch started without the revoked device, but the sync group is now frozen (its membership log is full, or a member's log would overflow it). \(ExportCommand.frozen) Export or push once, so the other devices learn of the revocation and freeze too."
            )
            return
        }
        context.output.note(
            "A new key epoch started for the remaining devices, and new devices now join by approval only. "
                + "Export or push so the other devices take the new epoch."
        )
    }
}

extension GroupMember {
    /// The member `text` names: its id, a unique id prefix, or a unique name.
    static func named(_ text: String, in members: [GroupMember]) throws -> GroupMember {
        let lowered = text.lowercased()
        if let exact = members.first(where: { $0.deviceID.uuidString.lowercased() == lowered }) { return exact }
        // A name and an id prefix are weighed together: a device named with the first digits of
        // another's id must not get that one revoked.
        let found = members.filter { $0.deviceID.uuidString.lowercased().hasPrefix(lowered) || $0.name == text }
        guard found.count == 1 else {
            throw CLIFailure(
                found.isEmpty
                    ? "no device of the group is '\(text)'; see coffer devices"
                    : "'\(text)' names more than one device (\(found.map(\.cliDescription).joined(separator: ", "))); give its whole id (see coffer devices)"
            )
        }
        return found[0]
    }

    /// `3f9c…e1 ('laptop')`, as messages name a device.
    var cliDescription: String { "\(deviceID.uuidString.lowercased()) ('\(PrintableText.escaping(name))')" }
}

/// A date as `coffer devices` shows it.
private func day(_ date: Date) -> String {
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
