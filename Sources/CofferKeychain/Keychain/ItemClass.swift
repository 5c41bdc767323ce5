/// The kind of a keychain item, after Keychain Services' `kSecClass` values. The class decides which
/// attributes make up the item's primary key (``primaryKeyAttributes``).
public enum ItemClass: String, Sendable, Hashable, CaseIterable, Codable {
    /// A password or token for a service (`kSecClassGenericPassword`). Key: service, account.
    case genericPassword
    /// A password for a server (`kSecClassInternetPassword`). Key: account, security domain, server,
    /// protocol, authentication type, port, path.
    case internetPassword
    /// A cryptographic key (`kSecClassKey`). Key: key class, key type, application label, application
    /// tag, key size.
    case key
    /// A certificate (`kSecClassCertificate`). Key: certificate type, issuer, serial number.
    case certificate
    /// A certificate with its private key (`kSecClassIdentity`). Key: as for certificates.
    case identity

    /// The attributes that, with the access group and the sync scope, identify an item of this class:
    /// two items may not share all of them.
    public var primaryKeyAttributes: [ItemAttributes.Name] {
        switch self {
        case .genericPassword: return [.service, .account]
        case .internetPassword:
            return [.account, .securityDomain, .server, .internetProtocol, .authenticationType, .port, .path]
        case .certificate, .identity: return [.certificateType, .issuer, .serialNumber]
        case .key: return [.keyClass, .keyType, .applicationLabel, .applicationTag, .keySizeInBits]
        }
    }

    /// The stored code of the class (docs/FORMAT.md).
    package var code: UInt8 {
        switch self {
        case .genericPassword: return 1
        case .internetPassword: return 2
        case .key: return 3
        case .certificate: return 4
        case .identity: return 5
        }
    }
}

extension ItemClass: StoredCode {}
