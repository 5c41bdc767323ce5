public import Foundation

/// What a device that wants to join a sync group by approval hands to a member: its id, name and
/// public keys (``Vault/requestJoin(at:passphrase:name:group:configuration:)-51kop``, ``Vault/approve(_:)-3q91o``).
///
/// Its text form is a few lines anyone can read, send and compare:
///
/// ```
/// coffer-join-request 1
/// device 0f6c2a8e-…
/// name laptop
/// keys 01…            (device-public: version ‖ X25519 public ‖ Ed25519 public, 130 hex digits)
/// fingerprint 3f2a-91bc-…
/// group 5d0e…          (the group it asks to join, when it names one)
/// group-fingerprint 91c0-…
/// group-seen 5e1f…,…   (the heads of the group's log the device saw)
/// ```
///
/// It holds no secret. Its fingerprint is what the two people compare before approving: a request
/// swapped on its way shows another one. A request that names its group is approved only by a member
/// of that group, and its vault joins only that group.
public struct JoinRequest: Sendable, Hashable {
    /// The requesting device's identity (id, public keys, fingerprint).
    public let identity: DeviceIdentity
    /// The name it asks to join with.
    public let name: String
    /// The group it asks to join, if it names one (every request `coffer init --request-join` makes
    /// does).
    public let group: GroupReference?

    package var publicKeys: DevicePublicKeys {
        DevicePublicKeys(agreement: Array(identity.encryptionKey), signing: Array(identity.signingKey))
    }

    package init(identity: DeviceIdentity, name: String, group: GroupReference? = nil) {
        self.identity = identity
        self.name = name
        self.group = group
    }

    private static let firstLine = "coffer-join-request 1"

    /// The request as text.
    public var text: String {
        ([
            Self.firstLine,
            "device \(identity.deviceID.uuidString.lowercased())",
            "name \(name)",
            "keys \(publicKeys.encoded.hexEncoded)",
            "fingerprint \(identity.fingerprint)",
        ]
            + (group.map { group in
                ["group \(group.id.uuidString.lowercased())", "group-fingerprint \(group.fingerprint)"]
                    + (group.seenHeads.isEmpty
                        ? [] : ["group-seen \(group.seenHeads.map(\.hexEncoded).joined(separator: ","))"])
            } ?? []))
            .joined(separator: "\n") + "\n"
    }

    /// Reads a request's text.
    ///
    /// - Throws: ``CofferError`` `.param` naming what is wrong: not a join request, a missing or
    ///   malformed line, or a fingerprint that does not match the keys (the request was altered).
    public init(text: String) throws(CofferError) {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard lines.first == Self.firstLine else {
            throw CofferError(
                .param,
                "this is not a Coffer join request (its first line is not \"\(Self.firstLine)\"); make one with \(InterfaceName.requestJoin)"
            )
        }
        lines.removeFirst()
        var fields: [String: String] = [:]
        for line in lines {
            guard let space = line.firstIndex(of: " ") else {
                throw CofferError(.param, "the join request has a malformed line: \(line)")
            }
            fields[String(line[..<space])] = String(line[line.index(after: space)...])
        }
        func field(_ name: String) throws(CofferError) -> String {
            guard let value = fields[name], !value.isEmpty else {
                throw CofferError(.param, "the join request has no \(name) line; it is incomplete")
            }
            return value
        }
        guard let device = UUID(uuidString: try field("device")) else {
            throw CofferError(.param, "the join request's device id is not a UUID")
        }
        guard let keyBytes = [UInt8](hexDigits: try field("keys")),
            let keys = try? DevicePublicKeys(decoding: keyBytes)
        else {
            throw CofferError(.param, "the join request's keys are malformed")
        }
        let identity = try DeviceIdentity(deviceID: device, encryptionKey: keys.agreement, signingKey: keys.signing)
        guard try field("fingerprint") == identity.fingerprint else {
            throw CofferError(
                .param,
                "the join request's fingerprint does not match its keys: it was altered; ask for the request again"
            )
        }
        let name = try field("name")
        try Vault.validateDeviceName(name)
        var group: GroupReference?
        if fields["group"] != nil || fields["group-fingerprint"] != nil {
            guard let id = UUID(uuidString: try field("group")) else {
                throw CofferError(.param, "the join request's group id is not a UUID")
            }
            var heads: [[UInt8]] = []
            for hex in (fields["group-seen"] ?? "").split(separator: ",") {
                guard let head = [UInt8](hexDigits: String(hex)), head.count == 32 else {
                    throw CofferError(.param, "the join request's group-seen line is malformed")
                }
                heads.append(head)
            }
            group = GroupReference(id: id, fingerprint: try field("group-fingerprint")).seeing(heads)
        }
        self.init(identity: identity, name: name, group: group)
    }
}

extension Vault {
    /// Creates a vault in `directory` that asks to join a sync group by approval, and returns it
    /// (unlocked) with the request to hand to a member. The vault holds device-bound records at once;
    /// syncable ones once it has joined: after a member runs ``approve(_:)-3q91o``, import any bundle of the
    /// group made since (or pull from its remote) and the vault joins.
    ///
    /// - Parameters:
    ///   - directory: Where the vault lives; absent or empty.
    ///   - passphrase: The passphrase that protects the new vault.
    ///   - name: The name to join with; the host name by default.
    ///   - group: The group to join (read it from a bundle of the group with
    ///     ``GroupReference``'s `init(bundle:)`, and compare its fingerprint with the one a member's
    ///     ``groupReference()-4zjb9`` shows): only a member of that group can approve the request, and the
    ///     vault joins only that group. `nil` makes a request any group may approve.
    ///   - configuration: KDF cost and storage options.
    /// - Throws: the errors of ``create(at:passphrase:configuration:)-1qlwi``, `.param` for a name that is
    ///   empty, over 200 bytes or holds a line break.
    public static func requestJoin(
        at directory: URL,
        passphrase: Passphrase,
        name: String? = nil,
        group: GroupReference? = nil,
        configuration: Configuration = Configuration()
    ) throws(CofferError) -> (vault: Vault, request: JoinRequest) {
        let name = name ?? defaultDeviceName
        try validateDeviceName(name)
        let vault = try create(
            at: directory,
            passphrase: passphrase,
            configuration: configuration,
            joining: .request(name: name, group: group)
        )
        guard let request = try vault.pendingJoinRequest() else {
            throw CofferError(.internalError, "the new vault holds no join request")
        }
        return (vault, request)
    }

    /// The join request this vault made, while it waits for approval; `nil` once it has joined (or
    /// for a vault that never asked).
    public func pendingJoinRequest() throws(CofferError) -> JoinRequest? {
        try checkOpen()
        guard let stored = try readMetaIfPresent(GroupContext.Meta.joinRequest) else { return nil }
        guard let text = String(validating: stored, as: UTF8.self) else {
            throw CofferError(.decode, "the vault's join request is damaged")
        }
        return try JoinRequest(text: text)
    }

    /// Refuses a device name that is empty, over 200 bytes, or holds a control character.
    package static func validateDeviceName(_ name: String) throws(CofferError) {
        guard !name.isEmpty, name.utf8.count <= 200,
            !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw CofferError(
                .param,
                "a device name must be 1 to 200 bytes without control characters or line breaks"
            )
        }
    }
}
