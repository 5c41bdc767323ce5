/// One exit status a command may end with, and what it means there: help, the man pages and the
/// reference list each command's own.
public struct ExitStatus: Sendable, Equatable {
    /// The status, as the shell's `$?` shows it.
    public let code: Int32
    /// What it means, one sentence.
    public let meaning: String

    /// Creates an exit status with its meaning.
    public init(_ code: Int32, _ meaning: String) {
        self.code = code
        self.meaning = meaning
    }

    /// 0: the command did what it was asked.
    public static let success = ExitStatus(0, "Success.")
    /// 1: the command failed.
    public static let failure = ExitStatus(
        1,
        "Failure; the message names the problem and what to do, and the vault is as it was."
    )
    /// 64: the command line could not be understood (`EX_USAGE`).
    public static let usage = ExitStatus(64, "A usage error: the command line could not be understood.")
    /// 130: Ctrl-C (killed by `SIGINT`, as a shell reports it).
    public static let interrupted = ExitStatus(
        130,
        "Interrupted by Ctrl-C (killed by SIGINT), after releasing what the command held."
    )

    /// What every command may end with.
    public static let standard: [ExitStatus] = [.success, .failure, .usage, .interrupted]

    /// `standard` and `extra`, in the order of their codes.
    public static func standard(adding extra: ExitStatus...) -> [ExitStatus] {
        (standard + extra).sorted { $0.code < $1.code }
    }
}

extension ExitStatus {
    /// 3 from `backup`: the snapshot was stored without some paths (restic's 3).
    static let incompleteBackup = ExitStatus(
        3,
        "The snapshot was stored, but without some paths it could not read (each is listed)."
    )
    /// 3 from `import`, `pull` and `init --join`: some records wait for data or were refused, or
    /// (from a store) some devices' changes wait.
    static let incompleteImport = ExitStatus(
        3,
        "Applied, but some records wait for data this vault lacks (records that devices no longer in the group sent do not count), or came from a device whose clock is ahead, or (from a store) some devices' changes wait behind an object this vault cannot read yet (the warnings say which); a later import or pull applies them."
    )
}
