/// What a restore does with a path that exists in the target already (restic 0.17's `--overwrite`).
///
/// A file is replaced whole: its new content is written under a temporary name in its directory and
/// renamed over the old one when complete, so the old file stays whole until then.
///
/// ```swift
/// try vault.snapshots.restore("latest", to: home, including: ["docs/report.pdf"], overwrite: .ifChanged)
/// ```
public enum RestoreOverwrite: String, Sendable, CaseIterable {
    /// Check every existing file's content against the snapshot, chunk by chunk, and replace it if
    /// any byte differs; set the metadata (mode, times, owner as root, extended attributes) of every
    /// file either way. Symbolic links and special files are replaced. restic's default, and Coffer's.
    case always
    /// Like ``always``, but take a regular file of the snapshot's size and modification time
    /// (to the nanosecond) as unchanged without reading it.
    case ifChanged = "if-changed"
    /// Only where the snapshot's modification time is later than the existing path's; then as
    /// ``always``. Anything else is left exactly as it is, metadata too.
    case ifNewer = "if-newer"
    /// Never touch an existing path other than a directory; only missing ones are restored.
    case never
}
