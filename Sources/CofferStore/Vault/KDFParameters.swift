/// The cost of turning a passphrase into a key with scrypt: N = 2^`logN`, block size `r`,
/// parallelism `p`. Stored per vault, so a vault keeps opening after the defaults change.
public struct KDFParameters: Sendable, Hashable, CustomStringConvertible {
    /// log2 of scrypt's N (CPU and memory cost).
    public var logN: UInt8
    /// scrypt's block size.
    public var r: UInt32
    /// scrypt's parallelism.
    public var p: UInt32

    /// Creates parameters. They are checked when used.
    public init(logN: UInt8, r: UInt32, p: UInt32) {
        self.logN = logN
        self.r = r
        self.p = p
    }

    /// The default: N = 2^15, r = 8, p = 1 (32 MiB, about 0.15 s on the build machine). Each guess an
    /// attacker makes at the passphrase costs the same.
    public static let standard = KDFParameters(logN: 15, r: 8, p: 1)

    /// A stronger setting for valuable vaults: N = 2^17 (128 MiB, about 0.6 s).
    public static let strong = KDFParameters(logN: 17, r: 8, p: 1)

    /// A cheap setting for tests and examples only (N = 2^10): it offers little protection.
    public static let insecureFastForTesting = KDFParameters(logN: 10, r: 8, p: 1)

    /// Memory one derivation needs, in bytes.
    public var memoryBytes: UInt64 { Scrypt.memoryNeeded(logN: logN, r: r, p: p) }

    /// `scrypt N=2^15 r=8 p=1`.
    public var description: String { "scrypt N=2^\(logN) r=\(r) p=\(p)" }

    /// Checks that the parameters are ones Coffer will use.
    package func validate() throws(CofferError) {
        guard (10...22).contains(logN), (1...32).contains(r), (1...16).contains(p) else {
            throw CofferError(
                .param,
                "KDF parameters \(self) are out of range (logN 10...22, r 1...32, p 1...16); use KDFParameters.standard"
            )
        }
        guard memoryBytes <= Scrypt.maximumMemory else {
            throw CofferError(
                .param,
                "KDF parameters \(self) need \(memoryBytes >> 20) MiB, over the \(Scrypt.maximumMemory >> 20) MiB limit"
            )
        }
    }
}
