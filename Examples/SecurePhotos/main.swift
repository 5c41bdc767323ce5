// SecurePhotos: a photo vault on Coffer, the worked example of embedding Coffer in an app.
//
//   secure-photos [--vault DIR] create-account USER   a vault with the account's credentials
//   secure-photos [--vault DIR] whoami                log in and show the account
//   secure-photos [--vault DIR] add FILE...           store images (whenUnlocked, syncable), each
//                                                     with its details in one transaction
//   secure-photos [--vault DIR] list                  the photos and their sizes
//   secure-photos [--vault DIR] check                 every photo has its details, and the reverse
//   secure-photos [--vault DIR] export NAME FILE      write a photo out
//   secure-photos [--vault DIR] credentials           reveal the account token (passphrase again)
//   secure-photos [--vault DIR] session [--idle-lock SECONDS]
//                                                     commands from standard input: add, list,
//                                                     export, credentials, lock, unlock, wait S
//   secure-photos [--vault DIR] sync-out BUNDLE       the syncable part, for another machine
//   secure-photos [--vault DIR] sync-in BUNDLE        a new vault on this machine from a bundle
//
// The passphrase comes from $SECURE_PHOTOS_PASSPHRASE, else the first line of standard input.
import Coffer
import Foundation

/// A command line the app cannot run: exit 64.
struct UsageError: Error {
    let message: String
}

let usage = """
    usage: secure-photos [--vault DIR] create-account USER | whoami | add FILE... | list | check |
           export NAME FILE | credentials | session [--idle-lock SECONDS] | sync-out BUNDLE | sync-in BUNDLE
    """

let input = Input()

func say(_ text: String) { print(text) }

func passphrase() throws -> Passphrase {
    if let text = ProcessInfo.processInfo.environment["SECURE_PHOTOS_PASSPHRASE"] { return Passphrase(text) }
    guard let line = input.line(prompt: "Passphrase: "), !line.isEmpty else {
        throw CofferError(.param, "no passphrase given; set SECURE_PHOTOS_PASSPHRASE or type it")
    }
    return Passphrase(line)
}

func run(_ arguments: [String]) throws {
    var arguments = arguments
    var directory = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share/secure-photos")
    if arguments.first == "--vault" {
        guard arguments.count >= 2 else { throw UsageError(message: "--vault needs a directory") }
        directory = URL(fileURLWithPath: arguments[1])
        arguments.removeFirst(2)
    }
    guard let command = arguments.first else { throw UsageError(message: "no command given") }
    let operands = Array(arguments.dropFirst())
    var idleLock: Duration?
    if command == "session", operands.first == "--idle-lock" {
        guard operands.count == 2, let seconds = Double(operands[1]), seconds > 0 else {
            throw UsageError(message: "--idle-lock needs a number of seconds")
        }
        idleLock = .milliseconds(Int(seconds * 1000))
    }
    let configuration = PhotoLibrary.configuration(idleLock: idleLock) { reason in
        input.line(prompt: "Passphrase again to \(reason): ")
    }

    switch (command, operands.count) {
    case ("create-account", 1):
        let library = try PhotoLibrary.createAccount(
            at: directory,
            user: operands[0],
            passphrase: try passphrase(),
            configuration: configuration
        )
        library.vault.close()
        say("Created the account \(operands[0]) in \(directory.path).")
    case ("sync-in", 1):
        let library = try PhotoLibrary.join(
            bundle: URL(fileURLWithPath: operands[0]),
            at: directory,
            passphrase: try passphrase(),
            configuration: configuration
        )
        defer { library.vault.close() }
        say("Joined as \(try library.userName()) with \(try library.photos().count) photos.")
    case ("whoami", 0), ("add", 1...), ("list", 0), ("check", 0), ("export", 2), ("credentials", 0), ("sync-out", 1),
        ("session", 0), ("session", 2):
        let library = try PhotoLibrary.logIn(
            at: directory,
            passphrase: try passphrase(),
            configuration: configuration
        )
        defer { library.vault.close() }
        if command == "session" {
            try session(library)
        } else {
            try perform(command, operands, library)
        }
    default:
        throw UsageError(message: "'\(([command] + operands).joined(separator: " "))' is not a command")
    }
}

/// Runs one command on a logged-in library.
func perform(_ command: String, _ operands: [String], _ library: PhotoLibrary) throws {
    switch (command, operands.count) {
    case ("whoami", 0): say("Logged in as \(try library.userName()).")
    case ("add", 1...):
        for path in operands { say("Added \(try library.add(URL(fileURLWithPath: path))).") }
    case ("list", 0):
        for photo in try library.photos() { say("\(photo.size)\t\(photo.name)") }
    case ("check", 0):
        let problems = try library.inconsistencies()
        for problem in problems { say(problem) }
        guard problems.isEmpty else { throw CofferError(.decode, "the library is inconsistent") }
        say("Every photo has its details.")
    case ("export", 2):
        try library.export(operands[0], to: URL(fileURLWithPath: operands[1]))
        say("Exported \(operands[0]).")
    case ("credentials", 0): say("\(try library.userName()): \(try library.token())")
    case ("sync-out", 1):
        let summary = try library.exportBundle(to: URL(fileURLWithPath: operands[0]))
        say(
            "Wrote \(summary.records.blobs) photos and \(summary.records.items) items (account and details) to \(operands[0])."
        )
    case ("lock", 0):
        library.vault.lock()
        say("Locked.")
    case ("unlock", 0):
        try library.unlock(try passphrase())
        say("Unlocked.")
    case ("wait", 1):
        guard let seconds = Double(operands[0]) else { throw UsageError(message: "wait needs seconds") }
        Thread.sleep(forTimeInterval: seconds)
    default:
        throw UsageError(message: "'\(([command] + operands).joined(separator: " "))' is not a command here")
    }
}

/// Reads commands from standard input until its end; a failed command is reported and the session
/// goes on (a locked vault says so, and `unlock` continues).
func session(_ library: PhotoLibrary) throws {
    while let line = input.line() {
        let words = line.split(separator: " ").map(String.init)
        guard let command = words.first, command != "quit" else { break }
        do {
            try perform(command, Array(words.dropFirst()), library)
        } catch let error as CofferError where error.code == .interactionNotAllowed {
            say("Locked: \(command) needs the passphrase; type unlock.")
        } catch {
            say("\(command) failed: \(error)")
        }
    }
}

do {
    try run(Array(CommandLine.arguments.dropFirst()))
} catch let error as UsageError {
    FileHandle.standardError.write(Data("secure-photos: \(error.message)\n\(usage)\n".utf8))
    exit(64)
} catch {
    FileHandle.standardError.write(Data("secure-photos: error: \(error)\n".utf8))
    exit(1)
}
