package import Coffer

/// The snapshots as the view names them, built once each time the records are read (not for every
/// lookup): by name component, each name's snapshots by time directory, and by id.
package struct SnapshotIndex: Sendable {
    /// The snapshots of one name.
    package struct Name: Sendable {
        /// Oldest first, each with its time directory's name: its UTC time to the second, with `-`
        /// and its short id when another snapshot of the name has the same second; a write-only
        /// client's (whose time is a claim) always has its short id and `.write-only` after it.
        package let times: [(name: [UInt8], record: SnapshotRecord)]
        private let byTime: [[UInt8]: SnapshotRecord]

        init(_ records: [SnapshotRecord]) {
            let ordered = records.sorted {
                $0.created != $1.created ? $0.created < $1.created : $0.id.lexicographicallyPrecedes($1.id)
            }
            let stamps = ordered.map { MountNames.time($0.info.created) }
            var counts: [String: Int] = [:]
            for stamp in stamps { counts[stamp, default: 0] += 1 }
            times = zip(stamps, ordered).map { stamp, record in
                let name =
                    record.isWriteOnly
                    ? "\(stamp)-\(record.info.shortID).write-only"
                    : counts[stamp, default: 0] > 1 ? "\(stamp)-\(record.info.shortID)" : stamp
                return (Array(name.utf8), record)
            }
            byTime = Dictionary(times.map { ($0.name, $0.record) }) { first, _ in first }
        }

        /// The newest snapshot's time directory name (never a write-only client's).
        package var latest: [UInt8]? { times.last { !$0.record.isWriteOnly }?.name }

        /// The snapshot whose time directory is `name`.
        package func snapshot(at name: [UInt8]) -> SnapshotRecord? { byTime[name] }

        /// When the newest of them was taken, in milliseconds since 1970.
        package var newestCreated: Int64? { times.last { !$0.record.isWriteOnly }?.record.created }
    }

    /// Every name's component, in byte order, with its snapshots.
    package let names: [(component: [UInt8], name: Name)]
    /// Every snapshot, oldest first.
    package let records: [SnapshotRecord]
    private let byComponent: [[UInt8]: Name]
    private let byID: [String: SnapshotRecord]

    /// The index of `records`.
    package init(_ records: [SnapshotRecord]) {
        self.records = records
        let grouped = Dictionary(grouping: records) { MountNames.component(for: $0.name) }
        names = grouped.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { ($0.key, Name($0.value)) }
        byComponent = Dictionary(names.map { ($0.component, $0.name) }) { first, _ in first }
        byID = Dictionary(records.map { ($0.info.id, $0) }) { first, _ in first }
    }

    /// The snapshots whose name's component is `component`.
    package func name(_ component: [UInt8]) -> Name? { byComponent[component] }

    /// The snapshot with the full id `id`.
    package func snapshot(id: String) -> SnapshotRecord? { byID[id] }
}
