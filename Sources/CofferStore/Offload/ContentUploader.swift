/// Uploads what a write stored so far to the object store a vault offloads to, and drops the local
/// copies beyond its cache budget: what lets a backup larger than the local disk's budget run. The
/// sync layer provides it (it pushes) and attaches it with the store (``Schema/contentUploader``).
///
/// A backup on a vault with one attached commits its new content in parts as it goes (hidden
/// snapshot records, docs/FORMAT.md, "Backup parts"), and calls ``upload()`` after each.
package protocol ContentUploader: AnyObject, Sendable {
    /// The store uploaded to, as `s3://BUCKET/PREFIX`.
    var location: String { get }

    /// The bytes of new content a part holds by default: a quarter of the cache budget, at least
    /// 64 MiB and at most 1 GiB.
    var partSize: UInt64 { get }

    /// Pushes the vault's changes (the parts committed so far), then drops the local copies of the
    /// chunks the store now holds, keeping at most the cache budget less `headroom` (what the next
    /// part may add) of what reads cached. Returns what the push said.
    ///
    /// - Throws: ``CofferError`` `.io` naming the store when it cannot be reached; the errors of a push.
    func upload(headroom: UInt64) throws(CofferError) -> [String]
}
