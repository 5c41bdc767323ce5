internal import CFuse3
package import Coffer
import Foundation
internal import Glibc

/// A ``VaultView`` mounted through libfuse: read-only, until Ctrl-C, `SIGTERM` or an `umount` of the
/// mount point.
///
/// Requests are served by one loop per thread, all on the session's descriptor (made non-blocking,
/// so that a thread another one beat to a request goes back to waiting): each waits in `poll(2)`
/// beside the process's interruption pipe (``Interruption``) and this mount's own stop pipe, which
/// the first loop to end writes, so a stop reaches every thread at once. The kernel reads ahead with several requests in flight, so
/// the threads open chunks in parallel.
package final class FUSEMount: Sendable {
    /// Why the loops ended.
    package enum Ending: Sendable, Equatable {
        /// The mount point was unmounted from outside (`umount`, `fusermount3 -u`).
        case unmounted
        /// A stop was requested: Ctrl-C or another signal, named.
        case stopped(String)
    }

    private let bridge: FUSEBridge
    private let mountPoint: String
    private let stopPipe: (read: Int32, write: Int32)
    private let ending = Locked<Ending?>(nil)
    private let unmounted = Locked(false)

    /// Prepares a mount of `view` at `mountPoint`; ``run(threads:whenMounted:)`` mounts it.
    ///
    /// - Throws: ``CofferError`` `.param` if `mountPoint` is not an existing directory.
    package init(view: VaultView, at mountPoint: String) throws(CofferError) {
        var status = stat()
        guard stat(mountPoint, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            throw CofferError(.param, "the mount point \(mountPoint) is not an existing directory; create it first")
        }
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else {
            throw CofferError(.internalError, "pipe for the mount's stop failed (\(Errno.current))")
        }
        for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        bridge = FUSEBridge(view: view)
        self.mountPoint = mountPoint
        stopPipe = (descriptors[0], descriptors[1])
    }

    deinit {
        close(stopPipe.read)
        close(stopPipe.write)
    }

    /// Mounts the view, calls `whenMounted`, serves requests on `threads` threads (this one among
    /// them) until a stop or an unmount, then unmounts (if still mounted) and returns why it ended.
    ///
    /// - Throws: ``CofferError`` `.io` if libfuse cannot mount (no `/dev/fuse`, no permission, a
    ///   mount point in use).
    package func run(threads: Int, whenMounted: () -> Void) throws(CofferError) -> Ending {
        var arguments = fuse_args()
        defer { fuse_opt_free_args(&arguments) }
        // ro: refuse writes in the kernel. default_permissions: the kernel checks each file's
        // recorded mode and owner, as on the backed-up machine.
        for argument in ["coffer", "-o", "ro,default_permissions,fsname=coffer,subtype=coffer"] {
            try FUSECall.check(fuse_opt_add_arg(&arguments, argument), "fuse_opt_add_arg", "out of memory")
        }
        var operations = FUSEOperations.table()
        let data = Unmanaged.passUnretained(bridge).toOpaque()
        let fuse = try FUSECall.check(
            coffer_fuse_new(&arguments, &operations, data),
            "fuse_new",
            "could not set up the file system"
        )
        defer { fuse_destroy(fuse) }
        try FUSECall.check(fuse_mount(fuse, mountPoint), "fuse_mount", "could not mount at \(mountPoint)")
        let session = fuse_get_session(fuse)
        let descriptor = fuse_session_fd(session)
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        whenMounted()

        let fuseAddress = UInt(bitPattern: fuse)
        // Held while unmounting: a second Ctrl-C meanwhile waits for the unmount, then ends.
        let unmountOnce: @Sendable () -> Void = { [unmounted] in
            unmounted.withLock { (done: inout Bool) in
                guard !done else { return }
                // After an outside unmount this finds the connection gone and does nothing.
                fuse_unmount(OpaquePointer(bitPattern: fuseAddress))
                done = true
            }
        }
        // A second Ctrl-C ends the process at once: unmount first, or the mount point stays
        // "Transport endpoint is not connected" until someone unmounts it.
        Interruption.withLastAction(unmountOnce) {
            serveOnThreads(threads, session: session, descriptor: descriptor)
            unmountOnce()
        }
        return ending.withLock { $0 } ?? .unmounted
    }

    /// Serves requests on `threads` threads, this one among them, until every loop has ended.
    private func serveOnThreads(_ threads: Int, session: OpaquePointer?, descriptor: Int32) {
        let others = max(threads, 1) - 1
        let finished = DispatchSemaphore(value: 0)
        let sessionAddress = UInt(bitPattern: session)
        for index in 0..<others {
            let thread = Thread { [self] in
                serve(UnsafeMutableRawPointer(bitPattern: sessionAddress)!, descriptor: descriptor)
                finished.signal()
            }
            thread.name = "coffer-mount-\(index + 1)"
            thread.start()
        }
        serve(UnsafeMutableRawPointer(bitPattern: sessionAddress)!, descriptor: descriptor)
        for _ in 0..<others { finished.wait() }
    }

    private func end(_ reason: Ending) {
        ending.withLock { if $0 == nil { $0 = reason } }
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
    }

    /// One loop: wait for a request (or a stop), read it, process it.
    private func serve(_ sessionPointer: UnsafeMutableRawPointer, descriptor: Int32) {
        let session = OpaquePointer(sessionPointer)
        var buffer = fuse_buf()
        defer { free(buffer.mem) }
        // Ctrl-C's wake-up pipe, when the caller runs inside Interruption.whileCancellable: one poll
        // watches it, the stop pipe and the session, so no stop can pass a waiting thread by.
        let wake = Interruption.wakeDescriptor ?? -1
        while fuse_session_exited(session) == 0 {
            if let signal = Interruption.requestedName { return end(.stopped(signal)) }
            var waiting = [
                pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            ]
            while poll(&waiting, 3, -1) < 0, errno == EINTR {}
            if waiting[2].revents != 0 { return end(.stopped(Interruption.requestedName ?? "stop")) }
            if waiting[1].revents != 0 { return }
            let received = fuse_session_receive_buf(session, &buffer)
            if received == -EINTR || received == -EAGAIN { continue }
            guard received > 0 else {
                // 0: the kernel ended the connection (an unmount from outside).
                return end(.unmounted)
            }
            fuse_session_process_buf(session, &buffer)
        }
        end(.unmounted)
    }
}
