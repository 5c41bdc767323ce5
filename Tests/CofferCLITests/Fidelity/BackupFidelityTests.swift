import CofferTestSupport
import Foundation
import Glibc
import Testing

/// Backups of hostile trees through the `coffer` binary, the way real machines are: names that are
/// not UTF-8, long and non-UTF-8 link targets, hard links, sparse files, extended attributes, ACLs
/// and capabilities, content changed with its modification time put back, the vault inside the tree,
/// a file growing during the backup, unreadable files.
@Suite("Backup fidelity end to end")
struct BackupFidelityTests {
    let cli: CLIHarness
    var source: URL { cli.directory.path("tree") }

    init() throws {
        cli = try CLIHarness()
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
    }

    /// Runs a bash script with `$T` the tree, `$V` the vault, `$COFFER` the binary.
    @discardableResult
    func shell(_ script: String) throws -> Products.Result {
        let result = try Products.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-euc", script],
            environment: cli.environment.merging([
                "T": source.path, "V": cli.directory.path("vault").path, "COFFER": cli.coffer.path,
                "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            ]) { _, new in new }
        )
        #expect(result.status == 0, "\(script): \(result.error)")
        return result
    }

    /// `lstat` of a path given as raw bytes.
    func status(_ path: [UInt8]) -> stat? {
        var status = stat()
        return lstat(path.map { CChar(bitPattern: $0) } + [0], &status) == 0 ? status : nil
    }

    /// Every name under `root`, as bytes, depth-first in byte order.
    func names(under root: URL) -> [[UInt8]] {
        var found: [[UInt8]] = []
        func walk(_ relative: [UInt8]) {
            let path = Array(root.path.utf8) + (relative.isEmpty ? [] : [UInt8(ascii: "/")] + relative)
            guard let handle = opendir(path.map { CChar(bitPattern: $0) } + [0]) else { return }
            var children: [[UInt8]] = []
            while let entry = readdir(handle) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
                if name != [46], name != [46, 46] { children.append(name) }
            }
            closedir(handle)
            for name in children.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                let child = relative.isEmpty ? name : relative + [UInt8(ascii: "/")] + name
                found.append(child)
                if let status = status(Array(root.path.utf8) + [UInt8(ascii: "/")] + child),
                    status.st_mode & S_IFMT == S_IFDIR
                {
                    walk(child)
                }
            }
        }
        walk([])
        return found
    }

    @Test("names that are not UTF-8, and link targets long or not UTF-8, back up and restore byte for byte")
    func nonUTF8Names() throws {
        try shell(
            """
            printf 'cv' > "$T"/r$'\\xe9'sum$'\\xe9'.doc
            mkdir "$T"/'Fotos '$'\\xe9'"t"$'\\xe9'
            printf 'sun' > "$T"/'Fotos '$'\\xe9'"t"$'\\xe9'/plage.jpg
            ln -s "$(printf 'x%.0s' $(seq 3000))" "$T"/long-link
            ln -s $'caf\\xe9' "$T"/latin1-link
            printf 'tab' > "$T"/$'tab\\there'
            """
        )
        let backup = try cli.run(["backup", source.path, "--name", "t"])
        #expect(backup.status == 0, "\(backup.error)")
        #expect(!backup.error.contains("warning"), "\(backup.error)")
        let shown = try cli.run(["show", "t"])
        #expect(shown.output.contains("r\\xe9sum\\xe9.doc"), "\(shown.output)")
        #expect(shown.output.contains("tab\\x09here"), "names are escaped for the terminal: \(shown.output)")
        let target = cli.directory.path("restored")
        #expect(try cli.run(["restore", "t", target.path]).status == 0)
        #expect(names(under: target) == names(under: source))
        #expect(names(under: target).count == 6)
        let resume =
            Array(target.path.utf8) + Array("/r".utf8) + [0xE9] + Array("sum".utf8) + [0xE9] + Array(".doc".utf8)
        #expect(status(resume)?.st_size == 2)
        #expect(try shell("readlink '\(target.path)/long-link' | tr -d '\\n' | wc -c").output == "3000\n")
        let link = try shell("readlink '\(target.path)/latin1-link' | od -An -tx1 | tr -d ' \\n'").output
        #expect(link == "636166e90a")
        #expect(try cli.run(["verify", "--read-data"]).status == 0)
    }

    @Test("hard links restore as links, sparse files with their holes, the root directory with its times")
    func linksSparseRoot() throws {
        try shell(
            """
            printf 'shared' > "$T"/a
            ln "$T"/a "$T"/b
            mkdir "$T"/d && ln "$T"/a "$T"/d/c
            truncate -s 256M "$T"/sparse.img
            printf 'tail' | dd of="$T"/sparse.img bs=1 seek=$((200*1024*1024)) conv=notrunc status=none
            touch -d '2001-02-03 04:05:06' "$T"
            """
        )
        #expect(try cli.run(["backup", source.path, "--name", "t", "-q"]).status == 0)
        let target = cli.directory.path("restored")
        #expect(try cli.run(["restore", "t", target.path, "-q"]).status == 0)
        let a = try #require(status(Array((target.path + "/a").utf8)))
        let b = try #require(status(Array((target.path + "/b").utf8)))
        let c = try #require(status(Array((target.path + "/d/c").utf8)))
        #expect(a.st_ino == b.st_ino && b.st_ino == c.st_ino)
        #expect(a.st_nlink == 3)
        let sparse = try #require(status(Array((target.path + "/sparse.img").utf8)))
        #expect(sparse.st_size == 256 << 20)
        #expect(
            sparse.st_blocks * 512 < 1 << 20,
            "a 256 MiB file with 4 bytes of data takes \(sparse.st_blocks * 512) bytes"
        )
        let restoredTail = try shell(
            "dd if='\(target.path)/sparse.img' bs=1 skip=$((200*1024*1024)) count=4 status=none"
        )
        #expect(restoredTail.output == "tail")
        let root = try #require(status(Array(target.path.utf8)))
        #expect(root.st_mtim.tv_sec == (try #require(status(Array(source.path.utf8)))).st_mtim.tv_sec)
    }

    @Test("extended attributes, POSIX ACLs and file capabilities are backed up and restored")
    func attributes() throws {
        try shell(
            """
            printf 'x' > "$T"/f && mkdir "$T"/d && printf 'tool' > "$T"/tool
            setfattr -n user.color -v blue "$T"/f
            setfattr -n user.empty "$T"/d
            setfacl -m u:65534:r "$T"/f
            setfacl -d -m u:65534:rx "$T"/d
            if [ "$(id -u)" = 0 ]; then setcap cap_net_bind_service+ep "$T"/tool; fi
            """
        )
        #expect(try cli.run(["backup", source.path, "--name", "t", "-q"]).status == 0)
        let target = cli.directory.path("restored")
        let restore = try cli.run(["restore", "t", target.path])
        #expect(restore.status == 0)
        #expect(!restore.error.contains("not restored"), "\(restore.error)")
        func dump(_ root: URL) throws -> String {
            try shell("cd '\(root.path)' && getfattr -d -m - --absolute-names f d tool 2>/dev/null | sort").output
        }
        let expected = try dump(source)
        #expect(expected.contains("user.color=\"blue\""))
        #expect(expected.contains("system.posix_acl_access"))
        if getuid() == 0 { #expect(expected.contains("security.capability")) }
        #expect(try dump(target) == expected)
        #expect(
            try shell("getfacl -p '\(target.path)/f' | grep -v '^#'").output
                == (try shell("getfacl -p '\(source.path)/f' | grep -v '^#'").output)
        )
    }

    @Test(
        "content changed with size, modification time and inode kept (touch -r, rsync -t --inplace) is backed up again"
    )
    func ctimeOnlyChange() throws {
        try shell("printf 'version one' > \"$T\"/doc && touch -d '2020-01-01' \"$T\"/doc")
        #expect(try cli.run(["backup", source.path, "--name", "t", "-q"]).status == 0)
        try shell(
            "printf 'version two' > \"$T\"/new && touch -r \"$T\"/doc \"$T\"/new && dd if=\"$T\"/new of=\"$T\"/doc conv=notrunc status=none && touch -r \"$T\"/new \"$T\"/doc && rm \"$T\"/new"
        )
        let second = try #require(try cli.json(["backup", source.path, "--name", "t"]) as? [String: Any])
        let stats = try #require((second["snapshot"] as? [String: Any])?["statistics"] as? [String: Any])
        #expect(stats["changedFiles"] as? Int == 1)
        let target = cli.directory.path("restored")
        #expect(try cli.run(["restore", "t", target.path, "-q"]).status == 0)
        #expect(try String(contentsOf: target.appendingPathComponent("doc"), encoding: .utf8) == "version two")
    }

    @Test(
        "a vault inside the tree is left out and the backup ends; the vault's own files are refused as input or output"
    )
    func vaultInsideTree() throws {
        let vault = source.appendingPathComponent(".local/share/coffer/default")
        let environment = ["COFFER_VAULT": vault.path]
        #expect(try cli.run(["init"], extra: environment).status == 0)
        try shell("head -c 3000000 /dev/urandom > \"$T\"/photo.raw")
        for _ in 0..<2 {
            let backup = try cli.run(["backup", source.path, "--name", "home", "--json"], extra: environment)
            #expect(backup.status == 0, "\(backup.error)")
            let listing = try #require(
                try JSONSerialization.jsonObject(with: Data(backup.output.utf8)) as? [String: Any]
            )
            #expect(listing["excluded"] as? [String] == [".local/share/coffer/default"])
        }
        let shown = try cli.run(["show", "home"], extra: environment).output
        #expect(!shown.contains("data.mdb"))
        let dataFile = vault.appendingPathComponent("data.mdb")
        let put = try cli.run(["put", "x", dataFile.path], extra: environment)
        #expect(put.status == 1)
        #expect(put.error.contains("the vault's own file"), "\(put.error)")
        #expect(try cli.run(["put", "photo", source.path + "/photo.raw", "-q"], extra: environment).status == 0)
        let get = try cli.run(["get", "photo", dataFile.path], extra: environment)
        #expect(get.status == 1)
        #expect(get.error.contains("would destroy the vault"), "\(get.error)")
        let export = try cli.run(["export", "--out", dataFile.path], extra: environment)
        #expect(export.status == 1)
        #expect(export.error.contains("would destroy the vault"), "\(export.error)")
        let ownDirectory = try cli.run(["backup", vault.path], extra: environment)
        #expect(ownDirectory.status == 1)
        #expect(ownDirectory.error.contains("vault's own directory"))
        #expect(try cli.run(["verify", "--read-data"], extra: environment).status == 0)
    }

    @Test("a file growing during the backup is recorded at the size it had when opened")
    func growingFile() throws {
        try shell("head -c 50000000 /dev/zero > \"$T\"/grows.log")
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/bash")
        // Bounded: at most 300 MiB more, whatever happens to this test.
        writer.arguments = [
            "-c", "for i in $(seq 300); do head -c 1048576 /dev/zero >> '\(source.path)/grows.log'; sleep 0.01; done",
        ]
        try writer.run()
        defer {
            writer.terminate()
            writer.waitUntilExit()
        }
        Thread.sleep(forTimeInterval: 0.2)
        let started = try #require(status(Array((source.path + "/grows.log").utf8))).st_size
        #expect(try cli.run(["backup", source.path, "--name", "t", "-q"]).status == 0)
        let ended = try #require(status(Array((source.path + "/grows.log").utf8))).st_size
        let entries = try #require(try cli.json(["show", "t"]) as? [[String: Any]])
        let recorded = try #require(entries.first { $0["path"] as? String == "grows.log" }?["size"] as? Int)
        #expect(recorded >= Int(started) && recorded <= Int(ended), "recorded \(recorded), from \(started) to \(ended)")
        let target = cli.directory.path("restored")
        #expect(try cli.run(["restore", "t", target.path, "-q"]).status == 0)
        #expect(status(Array((target.path + "/grows.log").utf8))?.st_size == off_t(recorded))
    }

    @Test("a backup that could not read a file says so and exits 3, as restic does")
    func unreadableFile() throws {
        try shell("printf 'ok' > \"$T\"/fine && printf 'secret' > \"$T\"/locked && chmod 000 \"$T\"/locked")
        let arguments = ["backup", source.path, "--name", "t"]
        var environment = cli.environment
        if getuid() == 0 {
            // Root reads anything; as root the backup runs as nobody, with a vault nobody owns.
            let vault = cli.directory.path("nobody-vault")
            environment["COFFER_VAULT"] = vault.path
            try shell("chmod 755 '\(cli.directory.url.path)' \"$T\"")
            let setpriv = URL(fileURLWithPath: "/usr/bin/setpriv")
            let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups", cli.coffer.path]
            try shell("mkdir '\(vault.path)' && chown 65534:65534 '\(vault.path)'")
            #expect(try Products.run(setpriv, nobody + ["init"], environment: environment).status == 0)
            let result = try Products.run(setpriv, nobody + arguments, environment: environment)
            #expect(result.status == 3, "\(result.error)")
            #expect(result.error.contains("locked"))
            #expect(result.error.contains("incomplete"))
            return
        }
        let result = try Products.run(cli.coffer, arguments, environment: environment)
        #expect(result.status == 3, "\(result.error)")
        #expect(result.error.contains("locked"))
    }
}
