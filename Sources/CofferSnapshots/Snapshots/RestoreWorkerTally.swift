/// What a restore's workers tell the restore as they go, under a lock: for the message a failure or
/// Ctrl-C ends with, which cannot wait for the results still in the pipeline.
package struct RestoreWorkerTally: Sendable {
    /// Files moved into place under their final names, whole.
    package var filesInPlace = 0
    /// Temporary files a worker could not remove after a failure.
    package var leftovers: [String] = []

    package init() {}
}
