public import Foundation

/// The attributes of a keychain item, after Keychain Services' `kSecAttr…` keys.
///
/// Which attributes identify an item depends on its class (``ItemClass/primaryKeyAttributes``); the
/// rest (label, comment, description, generic, creator, type) are stored but not part of the key.
/// Everything here is sealed with the item: none of it is stored in the clear.
///
/// As a query template, every attribute that is set must match; unset ones match anything.
///
/// ```swift
/// var attributes = ItemAttributes()
/// attributes.service = "api.example.com"
/// attributes.account = "deploy-bot"
/// attributes.label = "Deploy token"
/// ```
public struct ItemAttributes: Sendable, Hashable {
    /// An attribute's name.
    public enum Name: String, Sendable, Hashable, CaseIterable, Codable {
        /// The access group (`kSecAttrAccessGroup`); part of every class's primary key.
        case accessGroup
        /// A user-visible label (`kSecAttrLabel`).
        case label
        /// A user-editable comment (`kSecAttrComment`).
        case comment
        /// A user-visible description of the kind of item (`kSecAttrDescription`).
        case itemDescription
        /// Free-form bytes for the app (`kSecAttrGeneric`).
        case generic
        /// The item's creator, a four-character code as a number (`kSecAttrCreator`).
        case creator
        /// The item's type, a four-character code as a number (`kSecAttrType`).
        case type
        /// The service of a generic password (`kSecAttrService`); part of its primary key.
        case service
        /// The account name (`kSecAttrAccount`); part of both password classes' primary keys.
        case account
        /// The security domain of an internet password (`kSecAttrSecurityDomain`).
        case securityDomain
        /// The server's domain name or IP address (`kSecAttrServer`).
        case server
        /// The protocol, such as `https` (`kSecAttrProtocol`).
        case internetProtocol
        /// The authentication scheme, such as `httpBasic` (`kSecAttrAuthenticationType`).
        case authenticationType
        /// The port number (`kSecAttrPort`).
        case port
        /// The path, usually of a URL (`kSecAttrPath`).
        case path
        /// The certificate's type (`kSecAttrCertificateType`).
        case certificateType
        /// The certificate issuer's DER bytes (`kSecAttrIssuer`).
        case issuer
        /// The certificate's serial number bytes (`kSecAttrSerialNumber`).
        case serialNumber
        /// The key's class: public, private or symmetric (`kSecAttrKeyClass`).
        case keyClass
        /// The key's algorithm, such as `rsa` or `ec` (`kSecAttrKeyType`).
        case keyType
        /// Bytes identifying the key, usually a hash of its public key (`kSecAttrApplicationLabel`).
        case applicationLabel
        /// The app's own tag for the key (`kSecAttrApplicationTag`).
        case applicationTag
        /// The key's size in bits (`kSecAttrKeySizeInBits`).
        case keySizeInBits

        /// The kind of value the attribute holds.
        public var kind: Value.Kind {
            switch self {
            case .generic, .issuer, .serialNumber, .applicationLabel, .applicationTag: return .bytes
            case .creator, .type, .port, .certificateType, .keySizeInBits: return .number
            default: return .text
            }
        }

        /// The stored tag of the attribute (docs/FORMAT.md); never reused.
        package var code: UInt8 {
            switch self {
            case .accessGroup: return 1
            case .label: return 2
            case .comment: return 3
            case .itemDescription: return 4
            case .generic: return 5
            case .creator: return 6
            case .type: return 7
            case .service: return 8
            case .account: return 9
            case .securityDomain: return 10
            case .server: return 11
            case .internetProtocol: return 12
            case .authenticationType: return 13
            case .port: return 14
            case .path: return 15
            case .certificateType: return 16
            case .issuer: return 17
            case .serialNumber: return 18
            case .keyClass: return 19
            case .keyType: return 20
            case .applicationLabel: return 21
            case .applicationTag: return 22
            case .keySizeInBits: return 23
            }
        }
    }

    /// An attribute's value.
    public enum Value: Sendable, Hashable, CustomStringConvertible {
        /// Text (service, account, label, …).
        case text(String)
        /// Bytes (generic, issuer, application tag, …).
        case bytes(Data)
        /// A number (port, key size, creator, …).
        case number(Int64)

        /// The kinds of value.
        public enum Kind: Sendable {
            /// UTF-8 text.
            case text
            /// Raw bytes.
            case bytes
            /// A signed integer.
            case number
        }

        /// The kind of this value.
        public var kind: Kind {
            switch self {
            case .text: return .text
            case .bytes: return .bytes
            case .number: return .number
            }
        }

        /// Text as is, bytes as hex, numbers in decimal.
        public var description: String {
            switch self {
            case .text(let text): return text
            case .bytes(let bytes): return bytes.hexEncoded
            case .number(let number): return String(number)
            }
        }

        /// Appends `length (UInt32) ‖ stored bytes` to `buffer`, without an intermediate array.
        package func appendLengthPrefixed(to buffer: inout [UInt8]) {
            switch self {
            case .text(let text):
                withUnsafeBytes(of: UInt32(text.utf8.count).bigEndian) { buffer.append(contentsOf: $0) }
                buffer.append(contentsOf: text.utf8)
            case .bytes(let bytes):
                withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { buffer.append(contentsOf: $0) }
                buffer.append(contentsOf: bytes)
            case .number(let number):
                withUnsafeBytes(of: UInt32(8).bigEndian) { buffer.append(contentsOf: $0) }
                withUnsafeBytes(of: number.bigEndian) { buffer.append(contentsOf: $0) }
            }
        }

        /// The stored bytes: UTF-8, raw, or a big-endian `Int64`.
        package var encoded: [UInt8] {
            switch self {
            case .text(let text): return Array(text.utf8)
            case .bytes(let bytes): return Array(bytes)
            case .number(let number): return withUnsafeBytes(of: number.bigEndian) { Array($0) }
            }
        }

        package init(decoding bytes: ArraySlice<UInt8>, as kind: Kind) throws(KeychainError) {
            switch kind {
            case .text: self = .text(String(decoding: bytes, as: UTF8.self))
            case .bytes: self = .bytes(Data(bytes))
            case .number:
                guard bytes.count == 8 else {
                    throw KeychainError(.decode, "a stored number attribute is \(bytes.count) bytes, not 8")
                }
                self = .number(Int64(bitPattern: bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }))
            }
        }
    }

    /// One set attribute.
    private struct Entry: Hashable {
        package let name: Name
        package var value: Value
    }

    /// The set attributes in stored-code order. Items have a handful, so a short sorted array beats a
    /// dictionary (whose `String`-backed keys hash as strings) and a slot per possible attribute
    /// (which costs its size on every copy).
    private var entries: [Entry] = []

    /// No attributes set.
    public init() {}

    /// The attributes that are set.
    public var values: [Name: Value] {
        Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0.value) })
    }

    /// The names and values that are set, in stored-code order.
    package var setAttributes: [(name: Name, value: Value)] { entries.map { ($0.name, $0.value) } }

    /// Reads or sets an attribute by name. Setting a value of the wrong kind is a programming error.
    public subscript(name: Name) -> Value? {
        get {
            let code = name.code
            for entry in entries where entry.name.code == code { return entry.value }
            return nil
        }
        set {
            precondition(newValue == nil || newValue!.kind == name.kind, "attribute \(name) holds \(name.kind) values")
            let code = name.code
            let position = entries.firstIndex { $0.name.code >= code } ?? entries.endIndex
            let present = position < entries.endIndex && entries[position].name.code == code
            switch (newValue, present) {
            case (let value?, true): entries[position].value = value
            case (let value?, false): entries.insert(Entry(name: name, value: value), at: position)
            case (nil, true): entries.remove(at: position)
            case (nil, false): break
            }
        }
    }

    /// Whether every attribute set in `template` has the same value here.
    public func matches(_ template: ItemAttributes) -> Bool {
        matches(template, ignoring: nil)
    }

    /// Whether every attribute set in `template`, except `ignored`, has the same value here.
    package func matches(_ template: ItemAttributes, ignoring ignored: Name?) -> Bool {
        let skip = ignored?.code
        for wanted in template.entries where wanted.name.code != skip {
            guard let have = self[wanted.name], have == wanted.value else { return false }
        }
        return true
    }

    /// These attributes with every attribute set in `changes` replaced.
    package func merging(_ changes: ItemAttributes) -> ItemAttributes {
        var merged = self
        for change in changes.entries { merged[change.name] = change.value }
        return merged
    }

    private func text(_ name: Name) -> String? {
        if case .text(let value) = self[name] { return value }
        return nil
    }

    private func bytes(_ name: Name) -> Data? {
        if case .bytes(let value) = self[name] { return value }
        return nil
    }

    private func number(_ name: Name) -> Int64? {
        if case .number(let value) = self[name] { return value }
        return nil
    }

    /// The access group (`kSecAttrAccessGroup`). Unset on add: the handle's default group.
    public var accessGroup: String? {
        get { text(.accessGroup) }
        set { self[.accessGroup] = newValue.map(Value.text) }
    }
    /// A label for people (`kSecAttrLabel`).
    public var label: String? {
        get { text(.label) }
        set { self[.label] = newValue.map(Value.text) }
    }
    /// A comment (`kSecAttrComment`).
    public var comment: String? {
        get { text(.comment) }
        set { self[.comment] = newValue.map(Value.text) }
    }
    /// A description of the kind of item (`kSecAttrDescription`).
    public var itemDescription: String? {
        get { text(.itemDescription) }
        set { self[.itemDescription] = newValue.map(Value.text) }
    }
    /// Application-defined bytes (`kSecAttrGeneric`).
    public var generic: Data? {
        get { bytes(.generic) }
        set { self[.generic] = newValue.map(Value.bytes) }
    }
    /// The creator code (`kSecAttrCreator`).
    public var creator: Int64? {
        get { number(.creator) }
        set { self[.creator] = newValue.map(Value.number) }
    }
    /// The type code (`kSecAttrType`).
    public var type: Int64? {
        get { number(.type) }
        set { self[.type] = newValue.map(Value.number) }
    }
    /// The service (`kSecAttrService`); part of a generic password's key.
    public var service: String? {
        get { text(.service) }
        set { self[.service] = newValue.map(Value.text) }
    }
    /// The account (`kSecAttrAccount`); part of generic and internet passwords' keys.
    public var account: String? {
        get { text(.account) }
        set { self[.account] = newValue.map(Value.text) }
    }
    /// The security domain (`kSecAttrSecurityDomain`); part of an internet password's key.
    public var securityDomain: String? {
        get { text(.securityDomain) }
        set { self[.securityDomain] = newValue.map(Value.text) }
    }
    /// The server (`kSecAttrServer`); part of an internet password's key.
    public var server: String? {
        get { text(.server) }
        set { self[.server] = newValue.map(Value.text) }
    }
    /// The protocol, e.g. `https` (`kSecAttrProtocol`); part of an internet password's key.
    public var internetProtocol: String? {
        get { text(.internetProtocol) }
        set { self[.internetProtocol] = newValue.map(Value.text) }
    }
    /// The authentication type, e.g. `httpBasic` (`kSecAttrAuthenticationType`); part of an internet
    /// password's key.
    public var authenticationType: String? {
        get { text(.authenticationType) }
        set { self[.authenticationType] = newValue.map(Value.text) }
    }
    /// The port (`kSecAttrPort`); part of an internet password's key.
    public var port: Int64? {
        get { number(.port) }
        set { self[.port] = newValue.map(Value.number) }
    }
    /// The path (`kSecAttrPath`); part of an internet password's key.
    public var path: String? {
        get { text(.path) }
        set { self[.path] = newValue.map(Value.text) }
    }
    /// The certificate type (`kSecAttrCertificateType`); part of certificate and identity keys.
    public var certificateType: Int64? {
        get { number(.certificateType) }
        set { self[.certificateType] = newValue.map(Value.number) }
    }
    /// The issuer (`kSecAttrIssuer`); part of certificate and identity keys.
    public var issuer: Data? {
        get { bytes(.issuer) }
        set { self[.issuer] = newValue.map(Value.bytes) }
    }
    /// The serial number (`kSecAttrSerialNumber`); part of certificate and identity keys.
    public var serialNumber: Data? {
        get { bytes(.serialNumber) }
        set { self[.serialNumber] = newValue.map(Value.bytes) }
    }
    /// The key class, e.g. `private` (`kSecAttrKeyClass`); part of a key's key.
    public var keyClass: String? {
        get { text(.keyClass) }
        set { self[.keyClass] = newValue.map(Value.text) }
    }
    /// The key type, e.g. `ec` (`kSecAttrKeyType`); part of a key's key.
    public var keyType: String? {
        get { text(.keyType) }
        set { self[.keyType] = newValue.map(Value.text) }
    }
    /// The application label (`kSecAttrApplicationLabel`); part of a key's key.
    public var applicationLabel: Data? {
        get { bytes(.applicationLabel) }
        set { self[.applicationLabel] = newValue.map(Value.bytes) }
    }
    /// The application tag (`kSecAttrApplicationTag`); part of a key's key.
    public var applicationTag: Data? {
        get { bytes(.applicationTag) }
        set { self[.applicationTag] = newValue.map(Value.bytes) }
    }
    /// The key size in bits (`kSecAttrKeySizeInBits`); part of a key's key.
    public var keySizeInBits: Int64? {
        get { number(.keySizeInBits) }
        set { self[.keySizeInBits] = newValue.map(Value.number) }
    }
}

extension ItemAttributes.Name: StoredCode {}
