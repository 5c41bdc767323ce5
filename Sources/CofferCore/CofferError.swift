/// The keychain tier's name for ``CofferError``: one error type serves the whole library, so a caller
/// catches one thing; `KeychainError` reads naturally in keychain code.
public typealias KeychainError = CofferError

/// The error every public Coffer API throws: a ``Code`` to branch on, a message for people that names
/// the problem and what to do, and the lower-level error behind it, if any.
///
/// Codes carry Apple's OSStatus numbers where Keychain Services has one, so code ported from
/// `SecItem*` can keep its checks:
///
/// ```swift
/// do throws(CofferError) {
///     try vault.unlock(passphrase: "wrong")
/// } catch where error.code == .authFailed {
///     print("try again")
/// } catch {
///     throw error
/// }
/// ```
///
/// End with a catch-all, as here: with none after a catch by code, swiftc 6.3.1 can crash on code that
/// also awaits.
public struct CofferError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Compare with `==` or match in `catch`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A stable name, e.g. `authFailed`.
        public let name: String
        /// The matching Keychain Services `OSStatus`.
        public let osStatus: Int32

        private init(_ name: String, _ osStatus: Int32) {
            self.name = name
            self.osStatus = osStatus
        }

        /// A parameter was invalid (`errSecParam`, -50).
        public static let param = Code("param", -50)
        /// The passphrase or recovery key is wrong (`errSecAuthFailed`, -25293).
        public static let authFailed = Code("authFailed", -25293)
        /// The vault is locked, so the keys this needs are not in memory (`errSecInteractionNotAllowed`,
        /// -25308). Unlock it first.
        public static let interactionNotAllowed = Code("interactionNotAllowed", -25308)
        /// Stored data failed authentication or could not be decoded: it was altered or damaged
        /// (`errSecDecode`, -26275).
        public static let decode = Code("decode", -26275)
        /// No vault exists at the path (`errSecNoSuchKeychain`, -25294).
        public static let vaultNotFound = Code("vaultNotFound", -25294)
        /// The path holds something that is not a Coffer vault (`errSecInvalidKeychain`, -25295).
        public static let notAVault = Code("notAVault", -25295)
        /// The vault was written by a newer Coffer whose format this one does not know (reported with
        /// `errSecInvalidKeychain`, -25295).
        public static let unsupportedFormat = Code("unsupportedFormat", -25295)
        /// A vault (or other files) already exists where one was to be created (`errSecDuplicateKeychain`,
        /// -25296).
        public static let vaultExists = Code("vaultExists", -25296)
        /// The vault has been closed (`errSecNotAvailable`, -25291). Open it again.
        public static let closed = Code("closed", -25291)
        /// The disk is full (`errSecDiskFull`, -34). Nothing was changed.
        public static let diskFull = Code("diskFull", -34)
        /// The file system failed or refused access (`errSecIO`, -36).
        public static let io = Code("io", -36)
        /// No item matches the query (`errSecItemNotFound`, -25300).
        public static let itemNotFound = Code("itemNotFound", -25300)
        /// An item with the same primary key already exists (`errSecDuplicateItem`, -25299).
        public static let duplicateItem = Code("duplicateItem", -25299)
        /// The keychain handle was not granted the item's access group (`errSecMissingEntitlement`,
        /// -34018).
        public static let missingEntitlement = Code("missingEntitlement", -34018)
        /// The user declined an authentication request (`errSecUserCanceled`, -128).
        public static let userCanceled = Code("userCanceled", -128)
        /// Data was sealed under a key this device does not hold: a sync group's key epoch begun after
        /// this device was revoked, or one it has not received yet (`errSecNoAccessForItem`, -25243).
        public static let keyUnavailable = Code("keyUnavailable", -25243)
        /// A device or membership change is not trusted by the sync group: the device was revoked, is
        /// not a member, or signed something it may not (`errSecNotTrusted`, -67843).
        public static let notTrusted = Code("notTrusted", -67843)
        /// The storage engine failed in a way the caller cannot fix (`errSecInternalComponent`, -2070).
        public static let internalError = Code("internalError", -2070)

        /// The code's name and OSStatus, e.g. `authFailed (-25293)`.
        public var description: String { "\(name) (\(osStatus))" }

        /// Matches an error against a code in a `catch` pattern.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? CofferError)?.code == code
        }
    }

    /// What kind of failure this is.
    public let code: Code
    /// What went wrong and what to do about it, for people.
    public let message: String
    /// The lower-level error that caused this one, if any.
    public let underlyingError: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlyingError = underlying
    }

    /// The Keychain Services `OSStatus` for this error.
    public var osStatus: Int32 { code.osStatus }

    /// The code, its OSStatus and the message, e.g. `authFailed (-25293): the passphrase is wrong;
    /// the vault stays locked`: what a log should keep. Show people ``message``, which names the
    /// problem and what to do without the code.
    public var description: String { "\(code): \(message)" }
}
