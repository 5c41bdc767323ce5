import CofferTestSupport
import Foundation
import Glibc
import Testing

/// A FIFO, a directory, a socket, a device or a dangling link where `data.mdb` or `lock.mdb` belongs
/// (issue 38, finding 4): every command refuses at once, naming the file and what is there. A FIFO
/// there made every command wait forever.
@Suite("Anything but a regular file as data.mdb or lock.mdb is refused at once, by every command")
struct IrregularVaultFileTests {
    /// What is put in the file's place, and the words the message must use for it.
    enum Replacement: String, CaseIterable, CustomStringConvertible {
        case fifo, directory, socket, linkToDevice, danglingLink

        var description: String { rawValue }

        /// What the message says is there.
        var shown: String {
            switch self {
            case .fifo: "is a FIFO (named pipe)"
            case .directory: "is a directory"
            case .socket: "is a socket"
            case .linkToDevice: "is a symbolic link to a character device"
            case .danglingLink: "is a symbolic link to nothing"
            }
        }

        /// Puts it at `path` (which must not exist).
        func make(at path: String) throws {
            switch self {
            case .fifo:
                #expect(mkfifo(path, 0o600) == 0)
            case .directory:
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            case .socket:
                try Self.bindSocket(at: path)
            case .linkToDevice:
                try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/dev/null")
            case .danglingLink:
                try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: path + ".gone")
            }
        }

        /// A Unix socket bound at `path` (left bound: the file stays when the descriptor closes).
        private static func bindSocket(at path: String) throws {
            let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            #expect(descriptor >= 0)
            defer { close(descriptor) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            try #require(bytes.count < MemoryLayout.size(ofValue: address.sun_path))
            withUnsafeMutableBytes(of: &address.sun_path) { buffer in
                buffer.copyBytes(from: bytes)
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            #expect(bound == 0, "bind(\(path)): \(String(cString: strerror(errno)))")
        }
    }

    /// Commands that open the vault, each with what it needs.
    static let commands: [[String]] = [
        ["ls"], ["info"], ["stats"], ["get", "kept", "OUT"], ["put", "new", "IN"], ["rm", "kept"],
        ["verify", "--read-data"], ["export", "--out", "OUT"], ["compact"], ["repair"],
        ["passwd", "--new-passphrase-file", "IN"], ["item", "add", "--service", "s", "--account", "a", "--value", "v"],
        ["item", "find"], ["backup", "TREE"], ["snapshots"], ["key", "export"], ["devices"], ["init"],
    ]

    @Test(
        "a FIFO, directory, socket, device link or dangling link as data.mdb or lock.mdb",
        arguments: ["data.mdb", "lock.mdb"]
    )
    func refusedAtOnce(file: String) throws {
        let cli = try CLIHarness()
        let input = cli.directory.path("input")
        try Data("new passphrase".utf8).write(to: input)
        let tree = cli.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: tree.appendingPathComponent("x"))
        #expect(try cli.run(["put", "kept", input.path]).status == 0)
        let listing = try cli.run(["ls", "--json"]).output

        let vault = cli.directory.path("vault").path
        let path = vault + "/" + file
        let aside = cli.directory.path("aside").path
        // lock.mdb is made by every open: the real one is set aside only while the replacement is there.
        for replacement in Replacement.allCases {
            if FileManager.default.fileExists(atPath: path) {
                try FileManager.default.moveItem(atPath: path, toPath: aside)
            }
            try replacement.make(at: path)
            // The full list with a FIFO (the hang); a few commands for the other kinds.
            for command in replacement == .fifo ? Self.commands : Array(Self.commands.prefix(4)) {
                let arguments = command.map { argument in
                    switch argument {
                    case "IN": input.path
                    case "OUT": cli.directory.path("out").path
                    case "TREE": tree.path
                    default: argument
                    }
                }
                let what = "coffer \(arguments.joined(separator: " ")) with \(replacement) as \(file)"
                let result = try Products.run(
                    URL(fileURLWithPath: "/usr/bin/timeout"),
                    ["30", cli.coffer.path] + arguments,
                    environment: cli.environment
                )
                #expect(result.status == 1, "\(what): exit \(result.status) (124: it hung) \(result.error)")
                #expect(result.error.contains("\(path) \(replacement.shown)"), "\(what): \(result.error)")
                #expect(!FileManager.default.fileExists(atPath: cli.directory.path("out").path), "\(what)")
            }
            try FileManager.default.removeItem(atPath: path)
            if FileManager.default.fileExists(atPath: aside) {
                try FileManager.default.moveItem(atPath: aside, toPath: path)
            }
        }
        // The vault is as it was once the real file is back.
        #expect(try cli.run(["ls", "--json"]).output == listing)
        #expect(try cli.run(["verify", "--read-data"]).status == 0)
        #expect(try cli.run(["get", "kept"]).output == "new passphrase")
    }
}
