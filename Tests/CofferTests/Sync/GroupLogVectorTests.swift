import Foundation
import Testing

@testable import Coffer

/// The membership log's format pinned by a vector computed outside Coffer
/// (`Tools/vectors/group-log-kat`, Python's `cryptography`): the same entries, made by Coffer with
/// the same keys and times, encode to the same bytes, and Coffer reads the vector's log back.
@Suite("Membership log: known-answer vector")
struct GroupLogVectorTests {
    static let group = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!
    static let root = SecureBytes(copying: (0..<32).map { UInt8($0) })

    struct Device {
        let id: UUID
        let keys: DeviceKeys
        let name: String
    }

    static func device(
        _ name: String,
        id: String,
        secret: ClosedRange<UInt8>,
        seed: ClosedRange<UInt8>
    ) throws -> Device {
        Device(
            id: UUID(uuidString: id)!,
            keys: DeviceKeys(
                agreement: try X25519PrivateKey(secret: SecureBytes(copying: Array(secret))),
                signing: try Ed25519PrivateKey(seed: SecureBytes(copying: Array(seed)))
            ),
            name: name
        )
    }

    @Test("Coffer writes the vector's log byte for byte, and reads it: two members joined, one revoked")
    func vector() throws {
        var fields: [String: String] = [:]
        for line in try Vectors.text("coffer-group-log.txt").split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        let expected = try #require(fields["LOG"].flatMap { [UInt8](hexDigits: $0) })
        let a = try Self.device("a", id: "aaaaaaaa-0000-4000-8000-000000000001", secret: 1...32, seed: 33...64)
        let b = try Self.device("b", id: "bbbbbbbb-0000-4000-8000-000000000002", secret: 65...96, seed: 97...128)
        func time(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

        var log = GroupLog(group: Self.group)
        let roots: (KeyEpoch) -> SecureBytes? = { $0.isOriginal ? Self.root : nil }
        for (device, milliseconds) in [(a, Int64(1_700_000_000_000)), (b, 1_700_000_001_000)] {
            let keys = try DevicePublicKeys(
                decoding: [1] + (try device.keys.agreement.publicKey()) + (try device.keys.signing.publicKey())
            )
            let message = GroupEntry.proofMessage(
                previous: log.heads[0],
                author: device.id,
                keys: keys,
                name: device.name,
                epoch: .original
            )
            let proof = try GroupKeys.proof(of: message, root: Self.root)
            let entry = try GroupEntry(
                change: .joined(keys: keys, name: device.name, epoch: .original, proof: proof),
                parents: log.heads,
                author: device.id,
                signing: device.keys.signing,
                group: Self.group,
                time: time(milliseconds)
            )
            try log.append(entry, roots: roots)
        }
        for (change, milliseconds) in [
            (GroupEntry.Change.policy(.approval), Int64(1_700_000_002_000)),
            (.revoked(device: b.id, clock: 42 << 16), 1_700_000_003_000),
        ] {
            let entry = try GroupEntry(
                change: change,
                parents: log.heads,
                author: a.id,
                signing: a.keys.signing,
                group: Self.group,
                time: time(milliseconds)
            )
            try log.append(entry, roots: roots)
        }
        #expect(log.encoded == expected, "Coffer's log differs from the independently computed one")
        #expect(log.heads[0].hexEncoded == fields["HEAD"])

        let read = try GroupLog(group: Self.group, decoding: expected)
        let state = try read.state(roots: roots)
        #expect(state.members.map(\.device) == [a.id, b.id])
        #expect(state.member(b.id)?.isActive == false && state.member(b.id)?.revokedBy == a.id)
        #expect(state.policy == .approval && !state.uncheckedProofs)
        // Every byte is covered: a flipped byte anywhere makes the log refused or different.
        for offset in stride(from: 4, to: expected.count, by: 37) {
            var damaged = expected
            damaged[offset] ^= 0x01
            let outcome = Result { () throws(CofferError) in
                try GroupLog(group: Self.group, decoding: damaged).state(roots: roots)
            }
            if case .success(let other) = outcome { #expect(other != state, "byte \(offset)") }
        }
    }
}
