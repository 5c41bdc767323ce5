package import Foundation

/// What makes a snapshot record one part of a backup in progress (docs/FORMAT.md, "Backup parts"):
/// the device and the write that made it, its number in that write, and when it was written.
///
/// A backup on a vault that offloads its content to an object store commits what it has read in
/// parts as it goes, each a hidden snapshot whose tree holds the files read since the last part, and
/// uploads each (``ContentUploader``), so that the local copies can go while the backup runs and its
/// directory stays within the cache budget. The parts are syncable records like any other, so every
/// device keeps their chunks until the finished snapshot, which deletes them, arrives. Listings,
/// names, retention and mounts never show a part; a part left by a backup that was stopped is
/// deleted by a later backup on the same device (``Snapshots/staleParts``).
package struct BackupPart: Sendable, Equatable {
    /// The device whose backup wrote the part.
    package var device: UUID
    /// The write (``PendingWrites/WriteID``) the part belongs to.
    package var write: [UInt8]
    /// The part's number in its write, from 1.
    package var number: UInt32
    /// When the part was written (Unix ms, the writing device's clock): the snapshot's own time may
    /// be any (`backup --time`).
    package var written: Int64

    package init(device: UUID, write: [UInt8], number: UInt32, written: Int64) {
        self.device = device
        self.write = write
        self.number = number
        self.written = written
    }

    /// The part's block in the record's body: device id (16) ‖ write id (16) ‖ number (UInt32)
    /// ‖ written (Int64 ms).
    package func encode(into writer: inout BinaryWriter) {
        withUnsafeBytes(of: device.uuid) { writer.write(raw: $0) }
        writer.write(raw: write)
        writer.write(number)
        writer.write(written)
    }

    package static func decode(from reader: inout BinaryReader<[UInt8]>) throws(CofferError) -> BackupPart {
        let device = try reader.readBytes(16)
        let write = try reader.readBytes(16)
        let number = try reader.readUInt32()
        let written = try reader.readInt64()
        let uuid = device.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
        return BackupPart(device: UUID(uuid: uuid), write: write, number: number, written: written)
    }
}
