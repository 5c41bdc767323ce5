internal import Coffer
public import Foundation
internal import Glibc

/// Where the CLI writes and reads: standard output for results, standard error for messages and
/// progress, the terminal (when there is one) for passphrase prompts. Tests substitute a capturing
/// console.
public final class Console: @unchecked Sendable {
    private let writeOutput: @Sendable (Data) -> Void
    private let writeError: @Sendable (String) -> Void
    private let readInput: @Sendable () -> Data
    /// Whether standard input is a terminal (so prompting is possible).
    public let inputIsTerminal: Bool
    /// Whether standard error is a terminal (so progress bars may be drawn).
    public let errorIsTerminal: Bool
    /// Whether standard output is a terminal (where `dump` refuses to write binary data).
    public let outputIsTerminal: Bool
    /// Standard input and output as file descriptors, for streaming large data; `nil` when the console
    /// is not the process's (tests), and then data goes through the closures.
    let inputDescriptor: Int32?
    let outputDescriptor: Int32?
    /// Whether a progress line is on standard error, unfinished: a message first clears it, so that
    /// the message starts a line of its own.
    private var progressLineIsOpen = false
    private let progressLock = NSLock()

    /// Creates a console from functions that write standard output and standard error and read
    /// standard input.
    public convenience init(
        inputIsTerminal: Bool,
        errorIsTerminal: Bool,
        output: @escaping @Sendable (Data) -> Void,
        error: @escaping @Sendable (String) -> Void,
        input: @escaping @Sendable () -> Data = { Data() }
    ) {
        self.init(
            inputIsTerminal: inputIsTerminal,
            errorIsTerminal: errorIsTerminal,
            descriptors: nil,
            output: output,
            error: error,
            input: input
        )
    }

    private init(
        inputIsTerminal: Bool,
        errorIsTerminal: Bool,
        descriptors: (input: Int32, output: Int32)?,
        output: @escaping @Sendable (Data) -> Void,
        error: @escaping @Sendable (String) -> Void,
        input: @escaping @Sendable () -> Data
    ) {
        inputDescriptor = descriptors?.input
        outputDescriptor = descriptors?.output
        outputIsTerminal = descriptors.map { isatty($0.output) == 1 } ?? false
        self.inputIsTerminal = inputIsTerminal
        self.errorIsTerminal = errorIsTerminal
        writeOutput = output
        writeError = error
        readInput = input
    }

    /// The process's standard streams.
    public static func standard() -> Console {
        Console(
            inputIsTerminal: isatty(STDIN_FILENO) == 1,
            errorIsTerminal: isatty(STDERR_FILENO) == 1,
            descriptors: (STDIN_FILENO, STDOUT_FILENO),
            output: { data in writeStandardOutput(data) },
            error: { text in try? FileHandle.standardError.write(contentsOf: Data(text.utf8)) },
            input: { FileHandle.standardInput.readDataToEndOfFile() }
        )
    }

    /// Writes to standard output. A write that fails (standard output on a full disk, say) ends the
    /// process with exit 1 and a message naming the problem: results that did not arrive cannot be
    /// reported any other way, and Foundation's non-throwing write would stop the process with a
    /// crash. (A message that cannot be written to standard error is dropped.)
    private static func writeStandardOutput(_ data: Data) {
        // Plain writes, not a `FileDescriptorSink`: output after Ctrl-C ("Unmounted …", a summary)
        // must still go out, where the sink refuses to write once a stop was requested.
        let failure = data.withUnsafeBytes { (bytes) -> Errno? in
            var offset = 0
            while offset < bytes.count {
                switch valueOrErrno({ Glibc.write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset) }) {
                case .success(let count): offset += count
                case .failure(let error): return error
                }
            }
            return nil
        }
        guard let failure else { return }
        let message = "coffer: error: standard output: \(failure.outputWriteError.message)\n"
        try? FileHandle.standardError.write(contentsOf: Data(message.utf8))
        exit(CofferCommand.failure)
    }

    /// The terminal's width in columns: standard error's window size (`TIOCGWINSZ`), else `$COLUMNS`,
    /// else 80.
    var columns: Int {
        if errorIsTerminal, isProcessConsole {
            var size = winsize()
            if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        }
        if let text = ProcessInfo.processInfo.environment["COLUMNS"], let value = Int(text), value > 0 { return value }
        return 80
    }

    /// How wide listings on standard output may be: the terminal's width (`TIOCGWINSZ`, else
    /// `$COLUMNS`, else 80) when standard output is a terminal; `nil` (no limit) for a pipe or a file,
    /// which get every column in full.
    var outputColumns: Int? {
        guard outputIsTerminal else { return nil }
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let text = ProcessInfo.processInfo.environment["COLUMNS"], let value = Int(text), value > 0 { return value }
        return 80
    }

    /// Whether a person can be asked for a secret on the terminal (`/dev/tty`): standard input is a
    /// terminal, or standard input is in use (`tar c ~ | coffer put home.tar -`) while standard error
    /// is one, as ssh and sudo read the terminal itself. A test's console never asks.
    var canAskOnTerminal: Bool { inputIsTerminal || (errorIsTerminal && isProcessConsole) }

    /// The environment variable `name` exactly as the process holds it, bytes that are not UTF-8
    /// included (Foundation's `ProcessInfo` decodes values as UTF-8, replacing such bytes), or `nil`
    /// when it is unset or this console is not the process's (a test's, with an environment of its
    /// own).
    func processEnvironmentBytes(_ name: String) -> [UInt8]? {
        guard isProcessConsole, let value = getenv(name) else { return nil }
        return Array(
            UnsafeBufferPointer(
                start: UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self),
                count: strlen(value)
            )
        )
    }

    /// Whether this console is the process's own standard streams (not a test's capture).
    private var isProcessConsole: Bool { outputDescriptor != nil }

    /// Writes a line (or lines) of results to standard output.
    public func print(_ text: String) { writeOutput(Data((text.hasSuffix("\n") ? text : text + "\n").utf8)) }

    /// Writes bytes to standard output exactly as they are (a secret value, say).
    func writeOutput(raw data: Data) { writeOutput(data) }

    /// Reads standard input to its end.
    func readStandardInput() -> Data { readInput() }

    /// Writes a message to standard error, on a line of its own (a progress line drawn there is
    /// cleared first; the bar draws itself again at its next update), broken at spaces to fit a
    /// terminal's width.
    public func message(_ text: String) {
        let shown = errorIsTerminal && isProcessConsole ? WordWrap.wrap(text, width: columns) : text
        progressLock.lock()
        defer { progressLock.unlock() }
        let clear = progressLineIsOpen ? "\r\u{1B}[K" : ""
        progressLineIsOpen = false
        writeError(clear + (shown.hasSuffix("\n") ? shown : shown + "\n"))
    }

    /// Draws a progress line in place on standard error: back to the line's start, the text, the rest
    /// of the line before cleared (`ESC [ K`).
    func drawProgress(_ line: String) {
        progressLock.lock()
        defer { progressLock.unlock() }
        progressLineIsOpen = true
        writeError("\r" + line + "\u{1B}[K")
    }

    /// Clears the progress line, if one is drawn, leaving the cursor at the start of the empty line.
    func clearProgress() {
        progressLock.lock()
        defer { progressLock.unlock() }
        guard progressLineIsOpen else { return }
        progressLineIsOpen = false
        writeError("\r\u{1B}[K")
    }

    /// Writes `value` as pretty-printed JSON with sorted keys, ISO 8601 dates and ids in lower case
    /// (``JSONSchema``).
    func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        print(JSONSchema.normalizingIDs(String(decoding: try encoder.encode(value), as: UTF8.self)))
    }

    /// Asks a question on the terminal and returns the answer line; `nil` if there is no terminal.
    func ask(_ prompt: String) -> String? {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY)
        guard tty >= 0 else { return nil }
        defer { close(tty) }
        _ = prompt.withCString { write(tty, $0, strlen($0)) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(tty, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        return String(decoding: line, as: UTF8.self)
    }

    /// Asks for a secret on the terminal with echo off; `nil` if there is no terminal.
    func readSecret(prompt: String) -> [UInt8]? {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY)
        guard tty >= 0 else { return nil }
        defer { close(tty) }
        var original = termios()
        guard tcgetattr(tty, &original) == 0 else { return nil }
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        _ = prompt.withCString { write(tty, $0, strlen($0)) }
        tcsetattr(tty, TCSAFLUSH, &silent)
        defer {
            tcsetattr(tty, TCSAFLUSH, &original)
            _ = write(tty, "\n", 1)
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(tty, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        return line
    }
}
