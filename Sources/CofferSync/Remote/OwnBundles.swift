package import Foundation

/// The names of the bundles this vault wrote into its device's folder of one object store, kept in
/// `meta` under `remote-own <remote identity> <device id> <bundle name>` (docs/FORMAT.md, "Bundles off the
/// chain"). Any other bundle there was written by someone else holding this device's keys: another
/// copy of the vault, or a thief's. The other devices apply it as this device's; this vault applies
/// it too, or it alone would lack what it holds (red team round 24, F2).
package struct OwnBundles {
    package let schema: Schema
    package let remote: String
    package let device: UUID

    package init(schema: Schema, remote: String, device: UUID) {
        self.schema = schema
        self.remote = remote
        self.device = device
    }

    private var prefix: [UInt8] { Array("remote-own \(remote) \(device.uuidString.lowercased()) ".utf8) }

    /// The names recorded; empty for a vault that has recorded none yet (it pushed before Coffer kept
    /// them, or never pushed here).
    package func names(in txn: Transaction) throws -> Set<RemoteLayout.BundleName> {
        var names: Set<RemoteLayout.BundleName> = []
        try txn.forEach(in: schema.meta, prefix: prefix) { key, _ in
            let fileName = Substring(decoding: key.dropFirst(prefix.count), as: UTF8.self)
            if let name = RemoteLayout.BundleName(fileName: fileName) { names.insert(name) }
            return true
        }
        return names
    }

    /// Whether any name is recorded (read without going through them all).
    package func isEmpty(in txn: Transaction) throws -> Bool {
        var found = false
        try txn.forEach(in: schema.meta, prefix: prefix) { _, _ in
            found = true
            return false
        }
        return !found
    }

    /// Records that this vault wrote `names`.
    package func record(_ names: some Sequence<RemoteLayout.BundleName>, in txn: Transaction) throws {
        for name in names { try txn.put(schema.meta, key: prefix + Array(name.fileName.utf8), value: [1]) }
    }
}
