import Foundation

/// How a command shows what it did, decided once from `--json` and `--quiet`: every command writes
/// through this, so each mode means the same everywhere.
///
/// - text: results on standard output, notes and warnings on standard error, progress bars drawn.
/// - quiet (`-q`): results and warnings only.
/// - JSON (`--json`, which wins over `--quiet`): one JSON value on standard output, warnings on
///   standard error, nothing else.
struct Output: Sendable {
    /// The three modes.
    enum Mode: Sendable {
        case text, quiet, json
    }

    /// The mode in force.
    let mode: Mode
    /// Where output goes.
    let console: Console

    /// Whether progress bars and notes are shown.
    var isChatty: Bool { mode == .text }

    /// The result a command was asked for (a listing, a value, an id): `json` as JSON, else `text`
    /// on standard output, quiet or not.
    func result(_ json: some Encodable, text: () -> String) throws {
        guard mode != .json else { return try console.printJSON(json) }
        console.print(text())
    }

    /// What a command did, as a line on standard output (`Compacted data.mdb: …`): `json` as JSON;
    /// nothing when quiet.
    func done(_ json: some Encodable, text: () -> String) throws {
        switch mode {
        case .json: try console.printJSON(json)
        case .text: console.print(console.outputColumns.map { WordWrap.wrap(text(), width: $0) } ?? text())
        case .quiet: break
        }
    }

    /// What a command did, as a message on standard error beside its data (`Stored photos/cat.jpg: …`
    /// while the blob's bytes may go to standard output): `json` as JSON; nothing when quiet.
    func status(_ json: some Encodable, message: () -> String) throws {
        switch mode {
        case .json: try console.printJSON(json)
        case .text: console.message(message())
        case .quiet: break
        }
    }

    /// A note on standard error (a hint, what to do next), in text mode only.
    func note(_ message: @autoclosure () -> String) {
        if mode == .text { console.message(message()) }
    }

    /// A warning on standard error, in every mode: something the user must see.
    func warning(_ message: String) {
        console.message(message)
    }
}
