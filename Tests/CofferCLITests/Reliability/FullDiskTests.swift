import CofferTestSupport
import Foundation
import Glibc
import Testing

/// A small ext4 image, loop-mounted in a scratch directory (root only), unmounted at `deinit`, or by
/// this process's watchdog if the process dies first.
private final class LoopDisk {
    let scratch: TemporaryDirectory
    let mountPoint: URL
    let guarded: Watchdog.Record?

    /// Makes and mounts a `megabytes` MiB image, or returns `nil` (recording why) when that is not
    /// possible here.
    init?(megabytes: Int) throws {
        guard getuid() == 0 else {
            Issue.record("mounting the test file system needs root; run the suite as root (CI does)")
            return nil
        }
        scratch = try TemporaryDirectory()
        mountPoint = scratch.path("mnt")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let image = scratch.path("disk.img").path
        guarded = Watchdog.guardMount(mountPoint.path)
        let made = try Self.sh(
            "truncate -s \(megabytes)M '\(image)' && mkfs.ext4 -q -F '\(image)' && mount -o loop '\(image)' '\(mountPoint.path)'"
        )
        #expect(made.status == 0, "\(made.error)")
        guard made.status == 0 else { return nil }
    }

    deinit {
        _ = try? Self.sh("umount '\(mountPoint.path)'")
        guarded?.release()
    }

    /// Runs a bash script (`-eu`) with the system tools on the path.
    static func sh(_ script: String) throws -> Products.Result {
        try Products.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-euc", script],
            environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]
        )
    }
}

/// A vault on a small, really full file system (a loop-mounted 64 MiB ext4 image, so root is needed
/// to mount it): put, backup and import say the disk is full (not "an input/output error"), leave
/// every acknowledged write intact, leave no chunk behind, and work again once space is freed.
@Suite("A full disk: reported as full, nothing lost, nothing left behind")
struct FullDiskTests {
    @Test("put, backup and import on a full ext4 file system")
    func fullDisk() throws {
        guard let disk = try LoopDisk(megabytes: 64) else { return }
        let (scratch, mountPoint, sh) = (disk.scratch, disk.mountPoint, LoopDisk.sh)

        let coffer = try Products.executable("coffer")
        let vault = mountPoint.appendingPathComponent("vault").path
        let environment = ["COFFER_VAULT": vault, "COFFER_PASSPHRASE": "pw"]
        func run(_ arguments: [String]) throws -> Products.Result {
            try Products.run(coffer, arguments, environment: environment)
        }
        #expect(try run(["init"]).status == 0)
        #expect(try run(["item", "add", "--service", "kept", "--account", "a", "--value", "v"]).status == 0)
        let small = scratch.path("small")
        _ = try sh("head -c 5000000 /dev/urandom > '\(small.path)'")
        #expect(try run(["put", "small", small.path]).status == 0)
        let before = try #require(
            try JSONSerialization.jsonObject(with: Data(try run(["stats", "--json"]).output.utf8)) as? [String: Any]
        )

        let large = scratch.path("large")
        _ = try sh("head -c 90000000 /dev/urandom > '\(large.path)'")
        let put = try run(["put", "large", large.path])
        #expect(put.status == 1)
        #expect(put.error.contains("disk is full"), "\(put.error)")
        let tree = scratch.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: large, to: tree.appendingPathComponent("large"))
        let backup = try run(["backup", tree.path])
        #expect(backup.status == 1)
        #expect(backup.error.contains("disk is full"), "\(backup.error)")

        let after = try #require(
            try JSONSerialization.jsonObject(with: Data(try run(["stats", "--json"]).output.utf8)) as? [String: Any]
        )
        #expect(after["chunks"] as? Int == before["chunks"] as? Int, "the failed writes left chunks behind")
        #expect(try run(["verify", "--read-data"]).status == 0)
        #expect(try run(["item", "get", "--service", "kept", "--account", "a"]).output == "v")

        // The failed writes' pages are free inside data.mdb, which fills the disk, but compact has no
        // room for its copy of the live data: it says so and changes nothing (no partial copy left).
        let dataFile = URL(fileURLWithPath: vault + "/data.mdb")
        let fileBefore = try Data(contentsOf: dataFile)
        let compact = try run(["compact"])
        #expect(compact.status == 1)
        #expect(
            compact.error.contains("needs room for a copy"),
            "\(compact.error)"
        )
        #expect(try Data(contentsOf: dataFile) == fileBefore)
        #expect(!FileManager.default.fileExists(atPath: vault + "/data.mdb.compacting"))

        // A bundle too large for what is left: import says so too.
        let other = scratch.path("other-vault").path
        let otherEnvironment = ["COFFER_VAULT": other, "COFFER_PASSPHRASE": "pw"]
        #expect(try Products.run(coffer, ["init"], environment: otherEnvironment).status == 0)
        #expect(try Products.run(coffer, ["put", "large", large.path], environment: otherEnvironment).status == 0)
        let bundle = scratch.path("b.bundle").path
        #expect(try Products.run(coffer, ["export", "--out", bundle], environment: otherEnvironment).status == 0)
        let joined = mountPoint.appendingPathComponent("joined").path
        let join = try Products.run(
            coffer,
            ["init", "--join", bundle],
            environment: ["COFFER_VAULT": joined, "COFFER_PASSPHRASE": "pw"]
        )
        #expect(join.status == 1)
        #expect(join.error.contains("disk is full"), "\(join.error)")

        // Space back: the same put succeeds, and everything is there.
        _ = try sh("rm -rf '\(joined)'")
        try FileManager.default.removeItem(at: small)
        #expect(try run(["rm", "small"]).status == 0)
        let medium = scratch.path("medium")
        _ = try sh("head -c 20000000 '\(large.path)' > '\(medium.path)'")
        #expect(try run(["put", "medium", medium.path]).status == 0)
        #expect(try run(["verify", "--read-data"]).status == 0)
        // The reserve, if a clean-up used it, is made again by the next write once the file system has
        // room for it (pages freed inside data.mdb are not free space outside it).
        #expect(try run(["item", "add", "--service", "later", "--account", "a", "--value", "v"]).status == 0)
        var status = statvfs()
        if statvfs(mountPoint.path, &status) == 0, UInt64(status.f_bfree) * UInt64(status.f_frsize) > 4 << 20 {
            #expect(FileManager.default.fileExists(atPath: vault + "/space-reserve"), "the reserve is made again")
        }
    }

    @Test("get to a file on a full disk: exit 1 saying so, no file or temporary left, the space back")
    func getToFullDisk() throws {
        guard let disk = try LoopDisk(megabytes: 32) else { return }
        let (scratch, mountPoint, sh) = (disk.scratch, disk.mountPoint, LoopDisk.sh)
        let coffer = try Products.executable("coffer")
        let environment = ["COFFER_VAULT": scratch.path("vault").path, "COFFER_PASSPHRASE": "pw"]
        func run(_ arguments: [String]) throws -> Products.Result {
            try Products.run(coffer, arguments, environment: environment)
        }
        #expect(try run(["init"]).status == 0)
        let data = scratch.path("data")
        _ = try sh("head -c 40000000 /dev/urandom > '\(data.path)'")
        #expect(try run(["put", "data", data.path]).status == 0)
        func freeBytes() -> UInt64 {
            var status = statvfs()
            guard statvfs(mountPoint.path, &status) == 0 else { return 0 }
            return UInt64(status.f_bavail) * UInt64(status.f_frsize)
        }
        let free = freeBytes()
        let target = mountPoint.appendingPathComponent("out").path
        let get = try run(["get", "data", target])
        #expect(get.status == 1)
        #expect(get.error.contains("disk is full"), "\(get.error)")
        #expect(TemporaryDirectory.listing(mountPoint) == ["lost+found"])
        _ = try sh("sync")
        #expect(freeBytes() == free, "the failed get's blocks are free again")
        // With room, the same get writes the blob exactly.
        _ = try sh("head -c 20000000 '\(data.path)' > '\(data.path).small'")
        #expect(try run(["put", "small", data.path + ".small"]).status == 0)
        #expect(try run(["get", "small", target]).status == 0)
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: target))
                == Data(contentsOf: URL(fileURLWithPath: data.path + ".small"))
        )
    }

    @Test(
        "restore onto a full disk: names the file, no partial file or temporary name left; the same restore completes it once there is room"
    )
    func restoreToFullDisk() throws {
        guard let disk = try LoopDisk(megabytes: 48) else { return }
        let (scratch, mount, sh) = (disk.scratch, disk.mountPoint.path, LoopDisk.sh)
        let coffer = try Products.executable("coffer")
        let environment = ["COFFER_VAULT": scratch.path("vault").path, "COFFER_PASSPHRASE": "pw"]
        func run(_ arguments: [String]) throws -> Products.Result {
            try Products.run(coffer, arguments, environment: environment)
        }
        #expect(try run(["init"]).status == 0)
        let tree = scratch.path("tree").path
        _ = try sh(
            "mkdir -p '\(tree)/d'; for i in 1 2 3 4 5 6 7 8; do head -c 4000000 /dev/urandom > '\(tree)/d/f'$i; done"
        )
        #expect(try run(["backup", tree, "--name", "tree", "-q"]).status == 0)
        // 20 MB taken: the 32 MB restore cannot fit.
        _ = try sh("head -c 20000000 /dev/zero > '\(mount)/fill'; sync")
        let target = mount + "/out"
        let full = try run(["restore", "tree", target])
        #expect(full.status == 1)
        #expect(full.error.contains("disk is full"), "\(full.error)")
        #expect(full.error.contains("no partial file is left"), "\(full.error)")
        #expect(full.error.contains("running the same restore again completes it"), "\(full.error)")
        // The message names the file being written when the disk filled: d/fN.
        let named = full.error.range(of: #"restoring 'd/f[1-8]' failed"#, options: .regularExpression)
        #expect(named != nil, "\(full.error)")
        let listing = try sh(
            "cd '\(target)' && find . -name '.coffer-restore-*'; cd d && for f in *; do cmp \"$f\" '\(tree)/d/'\"$f\" >&2 || echo \"partial $f\"; done"
        )
        #expect(listing.output.isEmpty, "temporary or partial files under final names: \(listing.output)")
        if let named {
            let name = full.error[named].dropFirst("restoring '".count).prefix(while: { $0 != "'" })
            #expect(!FileManager.default.fileExists(atPath: target + "/" + name), "\(name) sits under its final name")
        }
        // Room again: the same command finishes the restore.
        _ = try sh("rm '\(mount)/fill'; sync")
        let again = try run(["restore", "tree", target])
        #expect(again.status == 0, "\(again.error)")
        let compared = try sh("diff -r '\(tree)' '\(target)' && find '\(target)' -name '.coffer-restore-*'")
        #expect(compared.status == 0 && compared.output.isEmpty, "\(compared.output) \(compared.error)")
    }

    @Test(
        "init and init --join with 0 KiB to 3 MiB free: done, or exit 1 saying the disk is full; never a crash or a leftover"
    )
    func nearlyFullDisk() throws {
        guard let disk = try LoopDisk(megabytes: 32) else { return }
        let (scratch, mountPoint, sh) = (disk.scratch, disk.mountPoint, LoopDisk.sh)

        let coffer = try Products.executable("coffer")
        let source = scratch.path("source").path
        let bundle = scratch.path("b.bundle").path
        let sourceEnvironment = ["COFFER_VAULT": source, "COFFER_PASSPHRASE": "pw"]
        #expect(try Products.run(coffer, ["init"], environment: sourceEnvironment).status == 0)
        _ = try sh("head -c 6000000 /dev/urandom > '\(scratch.path("data").path)'")
        #expect(
            try Products.run(coffer, ["put", "data", scratch.path("data").path], environment: sourceEnvironment).status
                == 0
        )
        #expect(try Products.run(coffer, ["export", "--out", bundle], environment: sourceEnvironment).status == 0)

        let mount = mountPoint.path
        for free in [0, 8, 16, 24, 48, 96, 1024, 3072] {
            // Leave `free` KiB: hold them in a gap file, fill the rest, give the gap back.
            _ = try sh(
                "head -c \(free * 1024) /dev/zero > '\(mount)/gap'; cat /dev/zero > '\(mount)/fill' 2>/dev/null || true; rm '\(mount)/gap'; sync"
            )
            for arguments in [["init"], ["init", "--join", bundle]] {
                let what = "\(arguments.joined(separator: " ")) with \(free) KiB free"
                let vault = mount + "/vault"
                let result = try Products.run(
                    coffer,
                    arguments,
                    environment: ["COFFER_VAULT": vault, "COFFER_PASSPHRASE": "pw"]
                )
                #expect(result.status == 0 || result.status == 1, "\(what): exit \(result.status) \(result.error)")
                if result.status == 1 {
                    #expect(result.error.contains("disk is full"), "\(what): \(result.error)")
                    #expect(TemporaryDirectory.listing(mountPoint) == ["fill", "lost+found"], "\(what)")
                } else if result.status == 0 {
                    let info = try Products.run(
                        coffer,
                        ["info"],
                        environment: ["COFFER_VAULT": vault, "COFFER_PASSPHRASE": "pw"]
                    )
                    #expect(info.status == 0, "\(what): \(info.error)")
                }
                _ = try sh("rm -rf '\(vault)'")
            }
            _ = try sh("rm -f '\(mount)/fill'")
        }
    }

    @Test(
        "rm, forget and item delete on a full disk: done with the space reserve, or a message saying how to make room"
    )
    func deletionsOnFullDisk() throws {
        guard let disk = try LoopDisk(megabytes: 32) else { return }
        let (scratch, mount, sh) = (disk.scratch, disk.mountPoint.path, LoopDisk.sh)
        let coffer = try Products.executable("coffer")
        let vault = mount + "/vault"
        func run(_ arguments: [String]) throws -> Products.Result {
            try Products.run(coffer, arguments, environment: ["COFFER_VAULT": vault, "COFFER_PASSPHRASE": "pw"])
        }
        #expect(try run(["init"]).status == 0)
        let tree = scratch.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        for name in ["a", "b"] {
            _ = try sh("head -c 3000000 /dev/urandom > '\(scratch.path(name).path)'")
            #expect(try run(["put", name, scratch.path(name).path]).status == 0)
        }
        _ = try sh("head -c 3000000 /dev/urandom > '\(tree.path)/t'")
        #expect(try run(["backup", tree.path]).status == 0)
        #expect(try run(["item", "add", "--service", "kept", "--account", "a", "--value", "v"]).status == 0)
        let snapshot = try #require(
            (try JSONSerialization.jsonObject(with: Data(try run(["snapshots", "--json"]).output.utf8))
                as? [[String: Any]])?.first?["id"] as? String
        )

        /// Fills the disk with no free page left inside data.mdb (compacted first) and proves it full:
        /// a small write into the vault fails for want of space.
        /// Without `reserve`, the space reserve is removed first, as a deletion just before would have.
        func fillDisk(_ what: String, reserve: Bool = true) throws {
            _ = try sh("rm -f '\(mount)'/fill*; sync")
            // A write with room makes the space reserve again if an earlier deletion used it.
            #expect(try run(["item", "add", "--service", "room", "--account", what, "--value", "v"]).status == 0)
            #expect(try run(["compact"]).status == 0, "\(what)")
            if !reserve { try FileManager.default.removeItem(atPath: vault + "/space-reserve") }
            _ = try sh(
                "cat /dev/zero > '\(mount)/fill' 2>/dev/null || true; for i in $(seq 1 64); do head -c 1024 /dev/zero > '\(mount)/fill'$i 2>/dev/null || break; done; sync"
            )
            // The first add that fails, the rest not run (a throwing closure makes `lazy.map` eager).
            var full: Products.Result?
            for index in 1...50 {
                let added = try run([
                    "item", "add", "--service", "filler", "--account", "\(what) \(index)", "--value", "v",
                ])
                if added.status != 0 {
                    full = added
                    break
                }
            }
            #expect(
                full?.error.contains("disk is full") == true,
                "\(what): the disk did not fill: \(full?.error ?? "")"
            )
            #expect(FileManager.default.fileExists(atPath: vault + "/space-reserve") == reserve, "\(what)")
        }

        // Each deletion alone on a full disk, with the reserve there: it is done.
        let deletions: [(String, [String])] = [
            ("rm", ["rm", "a"]), ("forget", ["forget", snapshot]),
            ("item delete", ["item", "delete", "--service", "kept", "--account", "a"]),
        ]
        for (what, arguments) in deletions {
            try fillDisk(what)
            let result = try run(arguments)
            #expect(result.status == 0, "\(what) on a full disk: \(result.error)")
        }
        #expect(try run(["ls"]).output.contains("b"))
        #expect(!(try run(["ls"]).output.contains("a ")))
        #expect(try run(["snapshots", "--json"]).output.filter { !$0.isWhitespace } == "[]")
        #expect(try run(["item", "get", "--service", "kept", "--account", "a"]).status == 1)

        // With the reserve used up (as by a deletion just before), a deletion that finds no room says
        // what to do, and changes nothing; with room made as it says, it is done.
        try fillDisk("no reserve", reserve: false)
        let listing = try run(["ls", "--json"]).output
        let refused = try run(["rm", "b"])
        #expect(refused.status == 1)
        for words in ["disk holding the vault \(vault) is full", "space reserve was used up", "nothing was changed"] {
            #expect(refused.error.contains(words), "\(refused.error)")
        }
        #expect(refused.error.contains("`df \(vault)`"), "\(refused.error)")
        #expect(try run(["ls", "--json"]).output == listing)
        _ = try sh("rm -f '\(mount)'/fill*; sync")
        #expect(try run(["rm", "b"]).status == 0)
        #expect(try run(["verify", "--read-data"]).status == 0)

        // The reserve is sized for the vault's trees. A snapshot of 2,000 small files, each a chunk
        // of its own, and one of every other file: forgetting the first lowers half the reference
        // counts and deletes the other half with their locators, ids that fall in every leaf of both
        // tables, so it copies them all and frees none, the most a deletion can copy; forgetting the
        // second deletes the rest. Each fits in the reserve on a full disk; the first does not in a
        // reserve of three quarters of the tree pages and no margin.
        let small = scratch.path("small")
        var generator = SystemRandomNumberGenerator()
        for index in 0..<2000 {
            let directory = small.appendingPathComponent("d\(index % 30)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let bytes = (0..<(200 + index % 1800)).map { _ in UInt8.random(in: 32...126, using: &generator) }
            try Data(bytes).write(to: directory.appendingPathComponent("\(index).txt"))
        }
        func snapshotIDs() throws -> [String] {
            try #require(
                (try JSONSerialization.jsonObject(with: Data(try run(["snapshots", "--json"]).output.utf8))
                    as? [[String: Any]])?.compactMap { $0["id"] as? String }
            )
        }
        #expect(try run(["backup", small.path]).status == 0)
        let whole = try snapshotIDs()
        for index in stride(from: 1, to: 2000, by: 2) {
            try FileManager.default.removeItem(at: small.appendingPathComponent("d\(index % 30)/\(index).txt"))
        }
        #expect(try run(["backup", small.path]).status == 0)
        let snapshots = whole + (try snapshotIDs()).filter { !whole.contains($0) }
        #expect(snapshots.count == 2)
        for (index, snapshot) in snapshots.enumerated() {
            try fillDisk("small files \(index)")
            let reserve = try #require(
                try FileManager.default.attributesOfItem(atPath: vault + "/space-reserve")[.size] as? Int
            )
            #expect(reserve < 1 << 20, "sized for the vault: \(reserve) bytes")
            let forgotten = try run(["forget", snapshot])
            #expect(
                forgotten.status == 0,
                "forget \(index) on a full disk with a reserve of \(reserve) bytes: \(forgotten.error)"
            )
        }
        _ = try sh("rm -f '\(mount)'/fill*; sync")
        #expect(try run(["snapshots", "--json"]).output.filter { !$0.isWhitespace } == "[]")
        #expect(try run(["verify", "--read-data"]).status == 0)
    }
}
