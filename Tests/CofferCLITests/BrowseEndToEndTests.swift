import CofferTestSupport
import Foundation
import Testing

/// `coffer ls SNAPSHOT [PATH]`, `coffer find PATTERN` and `coffer dump SNAPSHOT PATH` through the
/// built binary, on a tree with a Latin-1 name, a 150-byte name, links, a hard link and a FIFO; the
/// archives `dump` writes are read back by GNU tar and Python's tarfile.
@Suite("Browsing snapshots end to end: ls, find, dump")
struct BrowseEndToEndTests {
    let cli: CLIHarness
    let tree: URL
    static let longName = String(repeating: "n", count: 150) + ".txt"

    init() throws {
        cli = try CLIHarness()
        tree = cli.directory.path("tree")
        let made = try Products.run(
            URL(fileURLWithPath: "/bin/bash"),
            [
                "-c",
                """
                set -e; mkdir -p "$T"; cd "$T"; mkdir -p docs/deep empty; echo hello > docs/a.txt
                head -c 300000 /dev/urandom > docs/deep/big.bin; printf cv > docs/r$'\\xe9'sum$'\\xe9'.doc
                echo long > "docs/$LONG"; ln -s a.txt docs/link; ln docs/a.txt docs/hard; mkfifo docs/pipe
                touch -d '2020-01-01 00:00:00' docs/deep/big.bin
                """,
            ],
            environment: ["T": tree.path, "LONG": Self.longName]
        )
        #expect(made.status == 0, "\(made.error)")
        #expect(try cli.run(["backup", tree.path]).status == 0)
    }

    func lines(_ arguments: [String]) throws -> [String] {
        let result = try cli.run(arguments)
        #expect(result.status == 0, "\(arguments): \(result.error)")
        return result.output.split(separator: "\n").map(String.init)
    }

    @Test(
        "ls SNAPSHOT lists the top, ls SNAPSHOT PATH one directory, --recursive all under it; relative, absolute or escaped"
    )
    func listing() throws {
        let top = try lines(["ls", tree.path])
        #expect(top.count == 2 && top[0].hasSuffix("docs/") && top[1].hasSuffix("empty/"), "\(top)")
        let docs = try lines(["ls", tree.path, "docs"])
        #expect(docs.count == 7, "\(docs)")
        #expect(docs.contains { $0.hasSuffix("docs/link -> a.txt") } && docs.contains { $0.hasSuffix("docs/deep/") })
        #expect(!docs.contains { $0.contains("big.bin") })
        #expect(try lines(["ls", tree.path, tree.path + "/docs/"]) == docs)
        #expect(try lines(["ls", tree.path, "./docs", "--recursive"]).contains { $0.hasSuffix("docs/deep/big.bin") })
        #expect(try lines(["ls", tree.path, "docs/r\\xe9sum\\xe9.doc"]).count == 1)
        let json = try #require(try cli.json(["ls", tree.path, "docs/deep"]) as? [[String: Any]])
        #expect(json.map { $0["path"] as? String } == ["docs/deep/big.bin"])
        let missing = try cli.run(["ls", tree.path, "nowhere"])
        #expect(missing.status == 1 && missing.error.contains("holds no 'nowhere'"), "\(missing.error)")
        let outside = try cli.run(["ls", tree.path, "/etc"])
        #expect(outside.status == 1 && outside.error.contains("is not under"), "\(outside.error)")
        let misuse = try cli.run(["ls", "--recursive"])
        #expect(misuse.status == 64 && misuse.error.contains("go with a snapshot"))
        #expect(try cli.run(["ls"]).status == 0)
    }

    @Test("find matches names, whole paths with a slash, limits to snapshots and modification times, across snapshots")
    func finding() throws {
        try Data("second".utf8).write(to: tree.appendingPathComponent("docs/b.txt"))
        #expect(try cli.run(["backup", tree.path]).status == 0)
        let names = try lines(["find", "*.txt"])
        // a.txt and the long name in both snapshots, b.txt in the second.
        #expect(names.count == 5, "\(names)")
        #expect(names.allSatisfy { $0.contains(tree.path + "/docs/") })
        #expect(try lines(["find", "\(tree.path)/docs/*/*.bin"]).count == 2)
        #expect(try lines(["find", "deep"]).allSatisfy { $0.hasSuffix("/docs/deep/") })
        let ids = try #require(try cli.json(["snapshots"]) as? [[String: Any]]).compactMap { $0["id"] as? String }
        #expect(try lines(["find", "*.txt", "--snapshot", String(ids[1].prefix(8))]).count == 3)
        #expect(try lines(["find", "big.bin", "--newest", "2020-06-01"]).count == 2)
        #expect(try lines(["find", "big.bin", "--oldest", "2020-06-01"]).isEmpty)
        #expect(try lines(["find", "*", "--host", "nobody"]).isEmpty)
        let json = try #require(try cli.json(["find", "r*sum*"]) as? [[String: Any]])
        #expect(json.count == 2 && json.allSatisfy { ($0["path"] as? String)?.hasSuffix("r\\xe9sum\\xe9.doc") == true })
        let none = try cli.run(["find", "*.nothing"])
        #expect(none.status == 0 && none.error.contains("Nothing matches"))
    }

    @Test("dump writes a file as it is, and a directory as a tar that GNU tar and Python extract exactly")
    func dumping() throws {
        let file = try cli.run(["dump", tree.path, "docs/deep/big.bin"])
        #expect(file.status == 0, "\(file.error)")
        #expect(Data(file.output.utf8).count > 0)
        let archive = cli.directory.path("docs.tar")
        let bash = URL(fileURLWithPath: "/bin/bash")
        let environment = cli.environment.merging(["C": cli.coffer.path, "T": tree.path, "A": archive.path]) { $1 }
        let binary = try Products.run(
            bash,
            ["-c", "\"$C\" dump \"$T\" docs/deep/big.bin | cmp - \"$T/docs/deep/big.bin\""],
            environment: environment
        )
        #expect(binary.status == 0, "\(binary.output) \(binary.error)")
        let written = try Products.run(bash, ["-c", "\"$C\" dump \"$T\" docs > \"$A\""], environment: environment)
        #expect(written.status == 0 && written.error.contains("as a tar archive"), "\(written.error)")
        let out = cli.directory.path("extracted")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let untar = try Products.run(URL(fileURLWithPath: "/bin/tar"), ["-xf", archive.path, "-C", out.path])
        #expect(untar.status == 0 && untar.error.isEmpty, "\(untar.error)")
        let compared = try Products.run(
            bash,
            [
                "-c",
                """
                cd "$O/docs" && cmp a.txt "$T/docs/a.txt" && cmp deep/big.bin "$T/docs/deep/big.bin" \
                && cmp r$'\\xe9'sum$'\\xe9'.doc "$T"/docs/r$'\\xe9'sum$'\\xe9'.doc && cmp "$LONG" "$T/docs/$LONG" \
                && [ "$(readlink link)" = a.txt ] && [ a.txt -ef hard ] && [ -p pipe ] \
                && [ "$(stat -c %Y deep/big.bin)" = "$(stat -c %Y "$T/docs/deep/big.bin")" ]
                """,
            ],
            environment: ["O": out.path, "T": tree.path, "LONG": Self.longName]
        )
        #expect(compared.status == 0, "\(compared.output) \(compared.error)")
        let python = try Products.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            ["-c", "import sys, tarfile; print(len(tarfile.open(sys.argv[1]).getmembers()))", archive.path]
        )
        #expect(
            python.output.trimmingCharacters(in: .whitespacesAndNewlines) == "9",
            "\(python.output) \(python.error)"
        )
        // The whole snapshot: `.` names its top.
        let whole = try Products.run(
            bash,
            ["-c", "\"$C\" dump \"$T\" . | tar -t | sort | head -3"],
            environment: environment
        )
        #expect(whole.output.hasPrefix("docs/\ndocs/a.txt\ndocs/deep/"), "\(whole.output) \(whole.error)")
        let missing = try cli.run(["dump", tree.path, "docs/nothing"])
        #expect(missing.status == 1 && missing.error.contains("holds no 'docs/nothing'"))
    }

    @Test(
        "dump writes pax records where ustar overflows: ids of 8^7 and more, times before 1970 and from 8^11 s, long names and link targets; GNU tar and tarfile read them"
    )
    func dumpPax() throws {
        let wide = cli.directory.path("wide")
        let longTarget = String(repeating: "t", count: 120)
        let longName = String(repeating: "d", count: 60) + "/" + String(repeating: "f", count: 60)
        let made = try Products.run(
            URL(fileURLWithPath: "/bin/bash"),
            [
                "-c",
                """
                set -e; mkdir -p "$W/\(String(repeating: "d", count: 60))"; cd "$W"
                echo old > old; touch -d '1960-01-01 00:00:00 UTC' old
                echo far > far; touch -d '2300-01-01 00:00:00 UTC' far
                echo ids > ids; chown 3000000:3000001 ids
                echo long > "\(longName)"; ln -s "\(longTarget)" link
                """,
            ],
            environment: ["W": wide.path]
        )
        try #require(made.status == 0, "\(made.error)")
        #expect(try cli.run(["backup", wide.path, "--name", "wide"]).status == 0)
        let archive = cli.directory.path("wide.tar")
        let bash = URL(fileURLWithPath: "/bin/bash")
        let environment = cli.environment.merging(["C": cli.coffer.path, "A": archive.path]) { $1 }
        let written = try Products.run(bash, ["-c", "\"$C\" dump wide . > \"$A\""], environment: environment)
        #expect(written.status == 0, "\(written.error)")

        let listed = try Products.run(
            URL(fileURLWithPath: "/bin/tar"),
            ["-tvf", archive.path, "--numeric-owner", "--full-time", "--utc"]
        )
        #expect(listed.status == 0 && listed.error.isEmpty, "\(listed.error)")
        let lines = listed.output.split(separator: "\n").map(String.init)
        func line(_ name: String) -> String {
            lines.first { $0.hasSuffix(" " + name) || $0.contains(" " + name + " -> ") } ?? ""
        }
        #expect(line("ids").contains(" 3000000/3000001 "), "\(listed.output)")
        #expect(line("old").contains(" 1960-01-01 00:00:00 "), "\(listed.output)")
        #expect(line("far").contains(" 2300-01-01 00:00:00 "), "\(listed.output)")
        #expect(line("link").hasSuffix("link -> " + longTarget), "\(listed.output)")
        #expect(!line(longName).isEmpty, "\(listed.output)")

        let python = try Products.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                "-c",
                """
                import sys, tarfile
                for m in tarfile.open(sys.argv[1]).getmembers():
                    print(m.name, m.uid, m.gid, int(m.mtime), m.linkname, sep="|")
                """,
                archive.path,
            ]
        )
        #expect(python.status == 0, "\(python.error)")
        let members = Dictionary(
            python.output.split(separator: "\n").map { line in
                let fields = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
                return (fields[0], Array(fields.dropFirst()))
            },
            uniquingKeysWith: { first, _ in first }
        )
        #expect(members["ids"]?.prefix(2) == ["3000000", "3000001"], "\(python.output)")
        #expect(members["old"]?[2] == "-315619200", "\(python.output)")
        #expect(members["far"]?[2] == "10413792000", "\(python.output)")
        #expect(members["link"]?[3] == longTarget, "\(python.output)")
        #expect(members[longName] != nil, "\(python.output)")
    }

    @Test("dump refuses to write to a terminal", .enabled(if: Terminal.canRun))
    func dumpToTerminal() throws {
        let screen = try Terminal.run("\(cli.coffer.path) dump \(tree.path) docs", environment: cli.environment)
        #expect(screen.contains("standard output is a terminal"), "\(screen)")
    }
}
