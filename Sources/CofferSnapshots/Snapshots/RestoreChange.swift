/// What a restore did, or with `dryRun` would do, to one path of the target.
public struct RestoreChange: Sendable, CustomStringConvertible {
    /// The kinds of change, named as restic's `restore --dry-run -vv` names them, with `kept` added.
    public enum Action: String, Sendable {
        /// The path was missing and is created.
        case restored
        /// An existing file or link whose content differed is replaced.
        case updated
        /// An existing file already holds the snapshot's content; only its metadata is set.
        case unchanged
        /// An existing path left exactly as it is because of ``RestoreOverwrite/never`` or
        /// ``RestoreOverwrite/ifNewer``, its content not checked. restic reports these as unchanged.
        case kept
        /// A path of the target that is not in the snapshot, removed by `--delete`.
        case deleted
    }

    /// What happened to the path.
    public let action: Action
    /// The path under the target, printable (bytes that are not UTF-8 escaped as `\xHH`).
    public let path: String

    /// A change to `path`.
    public init(_ action: Action, _ path: String) {
        self.action = action
        self.path = path
    }

    /// `updated   docs/report.pdf`: the action, padded, then the path.
    public var description: String {
        action.rawValue + String(repeating: " ", count: 10 - action.rawValue.count) + path
    }
}
