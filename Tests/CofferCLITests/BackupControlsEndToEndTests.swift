import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `backup --exclude-caches --exclude-if-present --exclude-larger-than --one-file-system --dry-run`
/// and `restore --exclude`, through the built binary, each on a tree built to hit it.
@Suite("Backup controls end to end: markers, sizes, file systems, dry runs, restore excludes")
struct BackupControlsEndToEndTests {
    let cli: CLIHarness
    let tree: URL

    init() throws {
        cli = try CLIHarness()
        tree = cli.directory.path("tree")
        try write("notes.txt", "notes")
        try write("big.iso", String(repeating: "x", count: 300_000))
        try write("edge.bin", String(repeating: "y", count: 204_800))
        // A valid cache tag, one with the wrong signature, and a marker of the user's.
        try write("cache/CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# a cache\n")
        try write("cache/blob", "cached")
        try write("cache/sub/deep", "cached deeper")
        try write("fake-cache/CACHEDIR.TAG", "Signature: not the one\n")
        try write("fake-cache/kept", "kept")
        try write("scratch/.nobackup", "")
        try write("scratch/temp", "temporary")
        try write("tagged/.marker", "DROP ME please")
        try write("tagged/file", "file")
        try write("other-marker/.marker", "keep me")
        try write("other-marker/file", "file")
    }

    func write(_ path: String, _ text: String) throws {
        let url = tree.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    func shown() throws -> String { try cli.run(["show", tree.path]).output }

    @Test("--exclude-caches keeps a cache directory and its tag, leaves out the rest; a wrong signature is no cache")
    func caches() throws {
        let backup = try cli.run(["backup", tree.path, "--exclude-caches"])
        #expect(backup.status == 0, "\(backup.error)")
        let listing = try shown()
        #expect(listing.contains(" cache/CACHEDIR.TAG"), "\(listing)")
        #expect(listing.contains(" cache/\n"), "\(listing)")
        #expect(!listing.contains("cache/blob") && !listing.contains("cache/sub"), "\(listing)")
        #expect(listing.contains("fake-cache/kept"), "\(listing)")
        #expect(backup.error.contains("2 paths left out by the exclude options"), "\(backup.error)")
    }

    @Test("--exclude-if-present NAME and NAME:HEADER, repeatable")
    func markers() throws {
        let backup = try cli.run([
            "backup", tree.path, "--exclude-if-present", ".nobackup", "--exclude-if-present", ".marker:DROP ME",
        ])
        #expect(backup.status == 0, "\(backup.error)")
        let listing = try shown()
        #expect(listing.contains("scratch/.nobackup") && !listing.contains("scratch/temp"), "\(listing)")
        #expect(listing.contains("tagged/.marker") && !listing.contains("tagged/file"), "\(listing)")
        #expect(listing.contains("other-marker/file"), "\(listing)")
        let bad = try cli.run(["backup", tree.path, "--exclude-if-present", ":HEADER"])
        #expect(bad.status == 1 && bad.error.contains("is not a marker"), "\(bad.error)")
    }

    @Test("--exclude-larger-than leaves out larger files only (the limit itself is kept), in every unit")
    func sizes() throws {
        let backup = try cli.run(["backup", tree.path, "--exclude-larger-than", "200k"])
        #expect(backup.status == 0, "\(backup.error)")
        let listing = try shown()
        #expect(!listing.contains("big.iso") && listing.contains("edge.bin") && listing.contains("notes.txt"))
        #expect(try cli.run(["backup", tree.path, "--exclude-larger-than", "1KiB"]).status == 0)
        #expect(!(try shown()).contains("edge.bin"))
        let bad = try cli.run(["backup", tree.path, "--exclude-larger-than", "ten megs"])
        #expect(bad.status == 64 && bad.error.contains("--exclude-larger-than takes a size like"), "\(bad.error)")
    }

    @Test("--one-file-system records a mount point as an empty directory (a tmpfs, as root), and -x is the same")
    func oneFileSystem() throws {
        guard geteuid() == 0 else {
            print("skipped: mounting a tmpfs needs root")
            return
        }
        let mountPoint = tree.appendingPathComponent("mounted")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let guarded = Watchdog.guardMount(mountPoint.path)
        let mounted = try Products.run(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "tmpfs", mountPoint.path])
        guard mounted.status == 0 else {
            print("skipped: mount -t tmpfs failed here: \(mounted.error)")
            return
        }
        defer {
            _ = try? Products.run(URL(fileURLWithPath: "/bin/umount"), [mountPoint.path])
            guarded?.release()
        }
        try Data("on another file system".utf8).write(to: mountPoint.appendingPathComponent("inside"))
        #expect(try cli.run(["backup", tree.path]).status == 0)
        #expect(try shown().contains("mounted/inside"))
        for flag in ["--one-file-system", "-x"] {
            #expect(try cli.run(["backup", tree.path, flag]).status == 0)
            let listing = try shown()
            #expect(listing.contains("mounted/") && !listing.contains("mounted/inside"), "\(flag): \(listing)")
        }
    }

    @Test("--dry-run lists what would be read (new, then changed), reads and stores nothing, and applies the excludes")
    func dryRun() throws {
        let dataFile = cli.directory.path("vault").appendingPathComponent("data.mdb")
        let before = try Data(contentsOf: dataFile)
        let first = try cli.run(["backup", tree.path, "--dry-run", "--exclude", "*.iso"])
        #expect(first.status == 0, "\(first.error)")
        #expect(first.output.contains("would read  new") && first.output.contains("notes.txt"), "\(first.output)")
        #expect(!first.output.contains("big.iso"))
        #expect(first.error.contains("Nothing was read or stored"), "\(first.error)")
        #expect(try Data(contentsOf: dataFile) == before)
        #expect(
            try cli.json(["snapshots"]) as? [Any] == nil || (try cli.json(["snapshots"]) as? [Any])?.isEmpty == true
        )

        #expect(try cli.run(["backup", tree.path]).status == 0)
        try write("notes.txt", "notes, changed")
        let second = try cli.run(["backup", tree.path, "--dry-run"])
        #expect(
            second.output.contains("would read  changed") && second.output.contains("notes.txt"),
            "\(second.output)"
        )
        #expect(second.output.components(separatedBy: "\n").filter { $0.hasPrefix("would read") }.count == 1)
        #expect(second.error.contains("would read 1 of"), "\(second.error)")
        let json = try #require(try cli.json(["backup", tree.path, "--dry-run"]) as? [String: Any])
        #expect(json["changedFiles"] as? Int == 1)
        #expect((json["paths"] as? [[String: Any]])?.contains { $0["change"] as? String == "unchanged" } == true)
        #expect((try cli.json(["snapshots"]) as? [Any])?.count == 1)
    }

    @Test("restore --exclude and --iexclude leave paths out by backup's rules; ! puts one back with its parents")
    func restoreExcludes() throws {
        #expect(try cli.run(["backup", tree.path]).status == 0)
        let target = cli.directory.path("restored")
        let restore = try cli.run([
            "restore", tree.path, target.path, "--exclude", "*.iso", "--exclude", "cache", "--iexclude", "NOTES.TXT",
            "--exclude", "tagged", "--exclude", "!tagged/file",
        ])
        #expect(restore.status == 0, "\(restore.error)")
        let files = FileManager.default
        #expect(!files.fileExists(atPath: target.appendingPathComponent("big.iso").path))
        #expect(!files.fileExists(atPath: target.appendingPathComponent("cache").path))
        #expect(!files.fileExists(atPath: target.appendingPathComponent("notes.txt").path))
        #expect(files.fileExists(atPath: target.appendingPathComponent("edge.bin").path))
        #expect(files.fileExists(atPath: target.appendingPathComponent("fake-cache/kept").path))
        #expect(files.fileExists(atPath: target.appendingPathComponent("tagged/file").path))
        #expect(!files.fileExists(atPath: target.appendingPathComponent("tagged/.marker").path))
    }
}
