internal import CLinux

/// Names the calling thread for the operating system (`prctl(PR_SET_NAME)`): what `perf`, `top -H`
/// and `/proc/<pid>/task/<tid>/comm` show, and what `coffer-bench --profile-stages` groups a
/// backup's threads by. Foundation's `Thread.name`, set before the thread starts, stays inside the
/// process. Linux keeps 15 bytes of a name; the rest is cut. Naming is best effort: a failure leaves
/// the inherited name and changes nothing else.
package func nameCurrentThread(_ name: String) {
    _ = coffer_prctl_set_thread_name(String(decoding: Array(name.utf8.prefix(15)), as: UTF8.self))
}
