import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("Chunk records and the chunk store")
struct ChunkStoreTests {
    let fixture: StorageFixture
    var environment: Environment { fixture.environment }
    var schema: Schema { fixture.schema }
    let store: ChunkStore
    let keys: ChunkKeys
    let coder: ChunkRecord.Coder

    init() throws {
        fixture = try StorageFixture()
        store = ChunkStore(schema: fixture.schema)
        keys = try ChunkKeys(
            scope: .syncable,
            level: .afterFirstUnlock,
            idKey: .random(count: 32),
            sealKey: .random(count: 32)
        )
        coder = try ChunkRecord.Coder()
    }

    func seal(_ plaintext: [UInt8]) throws -> (id: ChunkID, sealed: [UInt8]) {
        let id = try keys.id(of: plaintext)
        return (id, try plaintext.withUnsafeBytes { try ChunkRecord.seal($0, id: id, keys: keys, coder: coder) })
    }

    func open(_ sealed: [UInt8], id: ChunkID, keys: ChunkKeys? = nil) throws -> [UInt8] {
        try sealed.withUnsafeBytes { try ChunkRecord.open($0, id: id, keys: keys ?? self.keys, coder: coder) }
    }

    @Test(
        "records round-trip: compressible data is stored compressed, random data raw",
        arguments: [0, 1, 1000, 65_536, 262_144]
    )
    func roundTrip(size: Int) throws {
        let text = [UInt8]((0..<size).map { UInt8(ascii: "a") + UInt8($0 % 13) })
        let random = SecureRandom.bytes(count: size)
        for plaintext in [text, random] {
            let (id, sealed) = try seal(plaintext)
            #expect(try open(sealed, id: id) == plaintext)
        }
        if size >= 1000 {
            #expect(try seal(text).sealed[3] == ChunkRecord.Encoding.zstd.rawValue)
            #expect(try seal(text).sealed.count < size / 2)
            #expect(try seal(random).sealed[3] == ChunkRecord.Encoding.raw.rawValue)
            #expect(try seal(random).sealed.count == size + ChunkRecord.headerSize + AESGCM.overhead)
        }
    }

    @Test("equal plaintexts share an id within a scope's keys; other keys give other ids")
    func ids() throws {
        let data = SecureRandom.bytes(count: 5000)
        #expect(try keys.id(of: data) == keys.id(of: data))
        let other = try ChunkKeys(
            scope: .syncable,
            level: .afterFirstUnlock,
            idKey: .random(count: 32),
            sealKey: .random(count: 32)
        )
        #expect(try other.id(of: data) != keys.id(of: data))
    }

    @Test("tampering is detected: flipped bytes, a record under another id, another scope's keys, a forged length")
    func tamper() throws {
        let (id, sealed) = try seal([UInt8](repeating: 7, count: 10_000))
        for position in [1, 2, 5, 8, 20, sealed.count - 1] {
            var altered = sealed
            altered[position] ^= 0x01
            let error = #expect(throws: CofferError.self) { _ = try open(altered, id: id) }
            #expect(error?.code == .decode, "byte \(position)")
        }
        let (otherID, _) = try seal([1, 2, 3])
        #expect(throws: CofferError.self) { _ = try open(sealed, id: otherID) }
        let deviceKeys = try ChunkKeys(
            scope: .deviceBound,
            level: .afterFirstUnlock,
            idKey: .random(count: 32),
            sealKey: .random(count: 32)
        )
        #expect(throws: CofferError.self) { _ = try open(sealed, id: id, keys: deviceKeys) }
        var forged = sealed
        forged[3] = 0x7f
        #expect(throws: CofferError.self) { _ = try open(forged, id: id) }
    }

    @Test("retain stores a chunk once and counts references; the last release frees it")
    func referenceCounts() throws {
        let (id, sealed) = try seal(SecureRandom.bytes(count: 3000))
        try environment.write { (txn) throws in
            #expect(try store.retain(id, sealed: sealed, in: txn))
            #expect(try !store.retain(id, sealed: sealed, in: txn))
            #expect(try !store.retain(id, sealed: nil, in: txn), "a known chunk needs no sealed bytes")
        }
        try environment.read { (txn) throws in
            #expect(try store.referenceCount(of: id, in: txn) == 3)
            #expect(try schema.records.count(in: txn) == 1)
        }
        try environment.write { (txn) throws in
            #expect(try !store.release(id, in: txn))
            #expect(try !store.release(id, in: txn))
            #expect(try store.release(id, in: txn))
        }
        try environment.read { (txn) throws in
            #expect(try store.referenceCount(of: id, in: txn) == nil)
            #expect(try schema.records.count(in: txn) == 0)
            #expect(try txn.count(schema.chunkRefs) == 0)
        }
    }

    @Test("loading returns the plaintext, nil for an unknown id; damaged counts are reported")
    func loadAndDamage() throws {
        let plaintext = SecureRandom.bytes(count: 70_000)
        let (id, sealed) = try seal(plaintext)
        try environment.write { (txn) throws in try store.retain(id, sealed: sealed, in: txn) }
        try environment.read { (txn) throws in
            #expect(try store.load(id, keys: keys, coder: coder, in: txn) == plaintext)
            #expect(try store.load(ChunkID([UInt8](repeating: 0, count: 32)), keys: keys, coder: coder, in: txn) == nil)
        }
        #expect(throws: CofferError.self) {
            try environment.write { (txn) throws in
                try store.retain(ChunkID([UInt8](repeating: 1, count: 32)), sealed: nil, in: txn)
            }
        }
        try environment.write { (txn) throws in try store.release(id, in: txn) }
        let error = #expect(throws: CofferError.self) {
            try environment.write { (txn) throws in try store.release(id, in: txn) }
        }
        #expect(error?.code == .decode)
        #expect(error?.message.contains("verify") == true)
    }

    @Test("a stored chunk is intact, damaged (any flipped byte, a record moved from another id) or cannot be told")
    func intactness() throws {
        let (id, sealed) = try seal(SecureRandom.bytes(count: 20_000))
        let intact = sealed.withUnsafeBytes { ChunkRecord.isIntact($0, id: id, keys: keys, cipher: coder.cipher) }
        #expect(intact == true)
        for position in [1, 2, 3, 6, 8, 20, sealed.count / 2, sealed.count - 1] {
            var altered = sealed
            altered[position] ^= 0x10
            let verdict = altered.withUnsafeBytes { ChunkRecord.isIntact($0, id: id, keys: keys, cipher: coder.cipher) }
            #expect(verdict == false, "byte \(position)")
        }
        let (otherID, _) = try seal([1, 2, 3])
        #expect(
            sealed.withUnsafeBytes { ChunkRecord.isIntact($0, id: otherID, keys: keys, cipher: coder.cipher) } == false
        )
        // Sealed in a key epoch these keys do not hold: nothing can be said of it here.
        var otherEpoch = sealed
        otherEpoch[1] |= 0x80
        otherEpoch.insert(contentsOf: [0, 0, 0, 0, 0, 0, 0, 9], at: ChunkRecord.headerSize)
        #expect(
            otherEpoch.withUnsafeBytes { ChunkRecord.isIntact($0, id: id, keys: keys, cipher: coder.cipher) } == nil
        )
        // A version a later Coffer may write: not damage.
        var later = sealed
        later[0] = ChunkRecord.version + 1
        #expect(later.withUnsafeBytes { ChunkRecord.isIntact($0, id: id, keys: keys, cipher: coder.cipher) } == nil)
    }

    @Test("a writer finds a damaged record as such, and its own sealing replaces it, one more reference taken")
    func damagedRecordReplaced() throws {
        let plaintext = SecureRandom.bytes(count: 30_000)
        let (id, sealed) = try seal(plaintext)
        var damaged = sealed
        damaged[sealed.count / 2] ^= 0x01
        try environment.write { (txn) throws in try store.retain(id, sealed: damaged, in: txn) }
        let absent = ChunkID([UInt8](repeating: 3, count: 32))
        try environment.read { (txn) throws in
            #expect(try store.stored(id, keys: keys, cipher: coder.cipher, in: txn) == .damaged)
            #expect(try store.stored(absent, keys: keys, cipher: coder.cipher, in: txn) == .absent)
        }
        let (_, resealed) = try seal(plaintext)
        try environment.write { (txn) throws in
            #expect(try !store.retain(id, sealed: resealed, replacing: true, in: txn))
        }
        try environment.read { (txn) throws in
            #expect(try store.stored(id, keys: keys, cipher: coder.cipher, in: txn) == .intact)
            #expect(try store.load(id, keys: keys, coder: coder, in: txn) == plaintext)
            #expect(try store.referenceCount(of: id, in: txn) == 2)
        }
        // A reference count without its record (the record lost): the writer stores it again.
        try environment.write { (txn) throws in try schema.records.delete(id, in: txn) }
        try environment.read { (txn) throws in
            #expect(try store.stored(id, keys: keys, cipher: coder.cipher, in: txn) == .damaged)
        }
    }
}
