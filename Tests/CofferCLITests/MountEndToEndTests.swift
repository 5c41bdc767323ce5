import CofferTestSupport
import Foundation
import Glibc
import Testing

/// Whether this machine lets a test mount a FUSE file system: root and a usable `/dev/fuse`.
private let canMount = getuid() == 0 && access("/dev/fuse", R_OK | W_OK) == 0

/// `coffer mount DIR` through the built binary and the kernel: a mounted snapshot compared with the
/// restored tree byte for byte (names that are not UTF-8, links, a hard link, a sparse file,
/// extended attributes, a FIFO, times and modes), random reads, the three ways it ends, locking,
/// and bad input.
@Suite(
    "Mounting the vault end to end",
    .enabled(if: canMount, "mounting needs root and a usable /dev/fuse; run the suite as root (CI does)"),
    .serialized
)
struct MountEndToEndTests {
    let cli: CLIHarness
    var tree: URL { cli.directory.path("tree") }
    var mountPoint: URL { cli.directory.path("mnt") }

    init() throws {
        cli = try CLIHarness()
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let made = try shell(
            """
            mkdir -p "$T/docs/deep/deeper" "$T/empty"; cd "$T"
            head -c 3000000 /dev/urandom > docs/big.bin; echo hello > docs/a.txt; : > docs/empty.txt
            printf 'caf\\xe9' > "docs/r$(printf '\\xe9')sum$(printf '\\xe9').doc"; ln -s a.txt docs/link
            ln -s "/nowhere/$(printf '\\xff')" docs/dangling; ln docs/a.txt docs/hard; mkfifo docs/pipe
            truncate -s 5M docs/sparse.img; printf data | dd of=docs/sparse.img bs=1 seek=3000000 conv=notrunc 2>/dev/null
            setfattr -n user.color -v blue docs/a.txt; chmod 640 docs/deep; echo x > docs/deep/deeper/x
            touch -h -d '2021-03-04 05:06:07.123456789' docs/link docs/big.bin; touch -d '2020-01-01' docs/deep
            """
        )
        #expect(made.status == 0, "\(made.error)")
        let backup = try cli.run(["backup", tree.path, "--name", "/home/ann"])
        #expect(backup.status == 0, "\(backup.error)")
    }

    @discardableResult
    func shell(_ script: String) throws -> Products.Result {
        try Products.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-euo", "pipefail", "-c", script],
            environment: cli.environment.merging([
                "T": tree.path, "M": mountPoint.path, "W": cli.directory.url.path,
                "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            ]) { _, new in new }
        )
    }

    /// Whether `mountPoint` is mounted now (`/proc/self/mountinfo`).
    func isMounted() -> Bool {
        let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        return table.split(separator: "\n").contains {
            $0.split(separator: " ").dropFirst(4).first == Substring(mountPoint.path)
        }
    }

    /// Starts `coffer mount` and waits until the kernel shows the mount. The mount point is recorded
    /// for this process's watchdog, which unmounts it if this process dies with it mounted.
    func mount(_ extra: [String] = []) throws -> RunningCoffer {
        Watchdog.guardMount(mountPoint.path)
        let running = try cli.start(["mount", mountPoint.path] + extra)
        let deadline = Date().addingTimeInterval(20)
        while !isMounted(), running.process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if !isMounted() {
            running.kill()
            let error = String(decoding: running.error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            Issue.record("coffer mount did not mount within 20 s: \(error)")
        }
        return running
    }

    /// Ends a mount with `signal` (or `umount` when nil) and returns its exit status and messages.
    func end(_ running: RunningCoffer, signal: Int32? = SIGINT) throws -> (status: Int32, output: String) {
        if let signal {
            kill(running.process.processIdentifier, signal)
        } else {
            let unmounted = try shell("umount \"$M\"")
            #expect(unmounted.status == 0, "\(unmounted.error)")
        }
        let deadline = Date().addingTimeInterval(20)
        while running.process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if running.process.isRunning {
            Issue.record("coffer mount did not end within 20 s")
            running.kill()
            _ = try shell("umount -l \"$M\" || true")
        }
        running.process.waitUntilExit()
        let output = String(decoding: running.output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (running.process.terminationStatus, output)
    }

    @Test(
        "a mounted snapshot is the restored tree: names, kinds, modes, owners, times, links, sizes, contents, attributes"
    )
    func mountedIsRestored() throws {
        #expect(try cli.run(["restore", "/home/ann", cli.directory.path("restored").path]).status == 0)
        let running = try mount()
        defer { _ = try? end(running) }
        let compared = try shell(
            """
            N="$M/snapshots/%2Fhome%2Fann"; S="$N/$(readlink "$N/latest")"; R="$W/restored"
            describe() {
                cd "$1"
                find . -printf '%p %y %M %U %G %T@ %l\\n' | LC_ALL=C sort
                find . ! -type d -printf '%p links %n\\n' | LC_ALL=C sort
                find . -type f -printf '%p size %s\\n' | LC_ALL=C sort
                find . -print0 | LC_ALL=C sort -z | xargs -0 getfattr -h -d -m '^user\\.' --absolute-names 2>/dev/null || true
            }
            diff <(describe "$R") <(describe "$S")
            diff -r --no-dereference -x pipe "$R" "$S"   # the FIFO: its kind and mode are compared above
            test "$(stat -c %b "$S/docs/sparse.img")" -lt 2000
            test "$(readlink "$S/docs/dangling")" = "/nowhere/$(printf '\\xff')"
            """
        )
        #expect(compared.status == 0, "\(compared.output)\(compared.error)")
        let listing = try shell("ls -l \"$M/snapshots/%2Fhome%2Fann/latest/docs/big.bin\" \"$M/ids\"")
        #expect(listing.output.contains("3000000"), "\(listing.output)")
    }

    @Test("random reads of a mounted file return the original's bytes")
    func randomReads() throws {
        let running = try mount()
        defer { _ = try? end(running) }
        let seed = UInt64.random(in: 1...1_000_000)
        let read = try shell(
            """
            python3 - "$T/docs/big.bin" "$M/snapshots/%2Fhome%2Fann/latest/docs/big.bin" \(seed) <<'PY'
            import random, sys
            original, mounted, seed = open(sys.argv[1], 'rb'), open(sys.argv[2], 'rb'), int(sys.argv[3])
            rng = random.Random(seed)
            for _ in range(300):
                offset, count = rng.randrange(0, 3000100), rng.randrange(1, 400000)
                original.seek(offset); mounted.seek(offset)
                if original.read(count) != mounted.read(count):
                    sys.exit(f"seed {seed}: bytes differ at {offset} (+{count})")
            PY
            """
        )
        #expect(read.status == 0, "seed \(seed): \(read.error)")
    }

    @Test("Ctrl-C, SIGTERM and umount each unmount it and end it with status 0")
    func ending() throws {
        for signal in [SIGINT, SIGTERM, nil] as [Int32?] {
            let running = try mount()
            #expect(try shell("cat \"$M/snapshots/%2Fhome%2Fann/latest/docs/a.txt\"").output == "hello\n")
            let ended = try end(running, signal: signal)
            #expect(ended.status == 0, "\(String(describing: signal))")
            #expect(ended.output.contains("Unmounted \(mountPoint.path)"), "\(ended.output)")
            #expect(!isMounted())
        }
    }

    @Test("a second Ctrl-C, which ends the process at once, still unmounts first")
    func secondInterrupt() throws {
        for _ in 0..<3 {
            let running = try mount()
            kill(running.process.processIdentifier, SIGINT)
            kill(running.process.processIdentifier, SIGINT)
            running.process.waitUntilExit()
            #expect(!isMounted(), "a dead mount point was left behind")
            if isMounted() { _ = try shell("umount -l \"$M\"") }
        }
    }

    @Test("with --lock-after, the vault locks when idle: whenUnlocked blobs vanish, the rest stays readable")
    func lockAfter() throws {
        let secret = cli.directory.path("secret.txt")
        try Data("secret".utf8).write(to: secret)
        #expect(try cli.run(["put", "secret", secret.path, "--when-unlocked"]).status == 0)
        #expect(try cli.run(["put", "plain", secret.path]).status == 0)
        let running = try mount(["--lock-after", "1"])
        defer { _ = try? end(running) }
        #expect(try shell("ls \"$M/blobs\"").output == "plain\nsecret\n")
        #expect(try shell("cat \"$M/blobs/secret\"").output == "secret")
        Thread.sleep(forTimeInterval: 2.5)
        #expect(try shell("ls \"$M/blobs\"").output == "plain\n")
        let refused = try shell("cat \"$M/blobs/secret\"")
        #expect(refused.status != 0 && refused.error.contains("No such file"), "\(refused.error)")
        #expect(try shell("cat \"$M/blobs/plain\"").output == "secret")
        #expect(try shell("cat \"$M/snapshots/%2Fhome%2Fann/latest/docs/a.txt\"").output == "hello\n")
    }

    @Test("bad input fails clearly and mounts nothing: no such directory, --lock-after 0, a wrong passphrase")
    func badInput() throws {
        let missing = try cli.run(["mount", cli.directory.path("nowhere").path])
        #expect(missing.status == 1 && missing.error.contains("is not an existing directory"), "\(missing.error)")
        let zero = try cli.run(["mount", mountPoint.path, "--lock-after", "0"])
        #expect(zero.status == 64 && zero.error.contains("--lock-after"), "\(zero.error)")
        let wrong = try cli.run(["mount", mountPoint.path], extra: ["COFFER_PASSPHRASE": "wrong"])
        #expect(wrong.status == 1, "\(wrong.error)")
        #expect(!isMounted())
    }
}
