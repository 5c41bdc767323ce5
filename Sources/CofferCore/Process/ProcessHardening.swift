internal import CLinux
internal import Glibc

/// Process-wide protections for programs that hold a vault's secrets in memory.
///
/// A core dump is a copy of the process's memory written to disk in the clear: keys, passphrases and
/// decrypted values included, wherever the kernel's `core_pattern` sends it. A crash report from the
/// Swift runtime's backtracer prints, beside each register, the 16 bytes of memory it points at, which
/// in the middle of a read are as likely as not plaintext. The `coffer` tool calls both functions below
/// before it reads a passphrase; an app embedding Coffer should do the same at launch (each is a
/// decision for the whole process, which is why the library never makes it on its own).
///
/// ```swift
/// try ProcessHardening.disableCoreDumps()
/// ProcessHardening.disableCrashBacktraces()
/// let vault = try Vault.open(at: url)
/// try vault.unlock(passphrase: passphrase)
/// ```
public enum ProcessHardening {
    /// Stops the kernel from writing a core dump of this process and other processes of the same user
    /// from attaching to it or reading its memory.
    ///
    /// Sets the core file size limit to zero, soft and hard (`setrlimit(RLIMIT_CORE)`), and marks the
    /// process not dumpable (`prctl(PR_SET_DUMPABLE, 0)`), which also makes `/proc/PID/mem` and
    /// `ptrace` refuse unprivileged callers. Neither can be undone by the process afterwards, and both
    /// are inherited by children it forks. Calling it again is harmless.
    ///
    /// - Throws: ``CofferError`` `.internalError` naming the call that failed and its `errno`.
    public static func disableCoreDumps() throws(CofferError) {
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        guard setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none) == 0 else {
            throw failure("setrlimit(RLIMIT_CORE, 0)")
        }
        guard coffer_prctl_set_not_dumpable() == 0 else { throw failure("prctl(PR_SET_DUMPABLE, 0)") }
    }

    /// The signals the Swift runtime's backtracer catches to report a crash.
    private static let crashSignals = [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGQUIT]

    /// Gives the crash signals their default action back, so a crash ends the process at once.
    ///
    /// On Linux the Swift runtime installs a backtracer for these signals. Its report shows memory
    /// next to the registers (secrets included), and it writes to standard output by default, so a
    /// crashed process whose output is a pipe nobody reads waits forever instead of ending (seen with
    /// `coffer get NAME | consumer` when the consumer stops reading). `SWIFT_BACKTRACE=enable=no` in
    /// the environment does the same, but only if it is set before the process starts.
    public static func disableCrashBacktraces() {
        for crashSignal in crashSignals { signal(crashSignal, SIG_DFL) }
    }

    private static func failure(_ call: String) -> CofferError {
        CofferError(
            .internalError,
            "\(call) failed (\(Errno.current)); secrets could end up in a core dump, so "
                + "the program stops here"
        )
    }
}
