import Coffer
import CofferMount
import Foundation

/// `coffer mount DIR`: the vault's snapshots and blobs as a read-only file system, until Ctrl-C or
/// `umount DIR`.
struct MountCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "mount",
        abstract: "Show the snapshots and blobs as a read-only file system at DIR (FUSE) until Ctrl-C or umount.",
        discussion: """
            DIR holds snapshots/NAME/TIME/ (each snapshot by name and UTC time, with NAME/latest a link
            to the newest), ids/ID/ (by full id) and blobs/NAME; a / in a name shows as %2F and a % as
            %25. Files keep the mode, owner, times, size and extended attributes they were backed up
            with, and the kernel checks permissions against them. Reads fetch only the chunks they
            touch, each checked as always; memory stays bounded whatever is read (16 MiB of opened
            chunks, the directories asked for). With --lock-after the vault locks when idle: its
            whenUnlocked blobs then vanish from blobs/ and cannot be read until a new mount. Needs
            /dev/fuse (libfuse 3); as a user, the fusermount3 helper of Debian's fuse3 package.
            """,
        examples: [
            "coffer mount /mnt/coffer                   # until Ctrl-C here, or umount /mnt/coffer elsewhere",
            "coffer mount /mnt/coffer --lock-after 600  # whenUnlocked blobs vanish after 10 idle minutes",
            "ls -l /mnt/coffer/snapshots/%2Fhome%2Fann/latest/",
            "cp -a /mnt/coffer/snapshots/%2Fhome%2Fann/2026-12-01T09:30:00Z/docs ~/docs-yesterday",
        ],
        isCancellable: true
    )

    @Option(value: "SECONDS", help: "Lock the vault after SECONDS without a read (its whenUnlocked blobs vanish).")
    var lockAfter: UInt64?

    @Argument("DIR", help: "An existing, empty directory to mount at.")
    var directory: String

    func validate() throws {
        if lockAfter == 0 { throw ValidationError("--lock-after takes 1 or more seconds, not 0") }
    }

    func run(_ context: CommandContext) throws {
        let vault = try context.openVault(vaultAccess, autoLockAfter: lockAfter.map { .seconds(Int64($0)) })
        defer { vault.close() }
        try run(vault, context)
    }

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let console = context.console
        let view = VaultView(vault: vault, owner: (uid: getuid(), gid: getgid())) { message in
            console.message("coffer: warning: \(message)")
        }
        let mount = try FUSEMount(view: view, at: directory)
        let threads = max(ProcessInfo.processInfo.activeProcessorCount, 2)
        let ending = try mount.run(threads: threads) {
            context.output.note(
                "Mounted at \(directory): snapshots/, ids/ and blobs/. Ctrl-C or umount \(directory) ends it."
            )
        }
        switch ending {
        case .unmounted:
            try context.output.done(["unmounted": directory]) { "Unmounted \(directory) (umount)." }
        case .stopped(let reason):
            try context.output.done(["unmounted": directory]) { "Unmounted \(directory) (\(reason))." }
        }
    }
}
