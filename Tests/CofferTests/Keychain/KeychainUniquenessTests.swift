import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Each class's primary key: items differing only in non-key attributes collide; items differing in
/// any key attribute, the access group or the scope do not.
@Suite("Keychain: primary keys per class")
struct KeychainUniquenessTests {
    static func sample(_ itemClass: ItemClass) -> ItemAttributes {
        var attributes = ItemAttributes()
        for name in itemClass.primaryKeyAttributes {
            switch name.kind {
            case .text: attributes[name] = .text("\(name.rawValue)-1")
            case .bytes: attributes[name] = .bytes(Data(name.rawValue.utf8))
            case .number: attributes[name] = .number(443)
            }
        }
        return attributes
    }

    @Test("same key collides, non-key attributes do not make a new item", arguments: ItemClass.allCases)
    func sameKey(itemClass: ItemClass) throws {
        let vault = try VaultFixture().create()
        try vault.keychain.add(KeychainItem(itemClass, attributes: Self.sample(itemClass), value: Data([1])))
        var other = Self.sample(itemClass)
        other.label = "a different label"
        other.comment = "and comment"
        let error = #expect(throws: KeychainError.self) {
            try vault.keychain.add(KeychainItem(itemClass, attributes: other, value: Data([2])))
        }
        #expect(error?.code == .duplicateItem)
    }

    @Test("changing any one key attribute makes a distinct item", arguments: ItemClass.allCases)
    func eachKeyAttribute(itemClass: ItemClass) throws {
        let vault = try VaultFixture().create()
        try vault.keychain.add(KeychainItem(itemClass, attributes: Self.sample(itemClass)))
        for name in itemClass.primaryKeyAttributes {
            var attributes = Self.sample(itemClass)
            switch name.kind {
            case .text: attributes[name] = .text("other")
            case .bytes: attributes[name] = .bytes(Data([9, 9]))
            case .number: attributes[name] = .number(8443)
            }
            try vault.keychain.add(KeychainItem(itemClass, attributes: attributes))
        }
        var grouped = Self.sample(itemClass)
        grouped.accessGroup = "another.group"
        try vault.keychain.add(KeychainItem(itemClass, attributes: grouped))
        // The scope is not part of the primary key: one key names one item, device-bound or syncable.
        let otherScope = #expect(throws: KeychainError.self) {
            try vault.keychain.add(KeychainItem(itemClass, attributes: Self.sample(itemClass), scope: .syncable))
        }
        #expect(otherScope?.code == .duplicateItem)
        #expect(try vault.keychain.find(ItemQuery(itemClass)).count == itemClass.primaryKeyAttributes.count + 2)
    }

    @Test("classes do not collide with each other")
    func acrossClasses() throws {
        let vault = try VaultFixture().create()
        for itemClass in ItemClass.allCases { try vault.keychain.add(KeychainItem(itemClass)) }
        for itemClass in ItemClass.allCases { #expect(try vault.keychain.find(ItemQuery(itemClass)).count == 1) }
        #expect(try vault.keychain.find(ItemQuery()).count == ItemClass.allCases.count)
    }

    @Test("the generic-password fast path computes the same id as the general one, for random texts")
    func genericPasswordFastPathID() throws {
        var generator = SplitMix64(seed: 97)
        func text() -> String {
            let alphabet = Array("aé€😀 -_/0".unicodeScalars)
            let length = Int(generator.next() % 12)
            return String(
                String.UnicodeScalarView(
                    (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
                )
            )
        }
        for scope in SyncScope.allCases {
            let index = try ItemIndex(key: .random(count: 32), scope: scope)
            for _ in 0..<200 {
                let (service, account, group) = (text(), text(), text())
                var attributes = ItemAttributes()
                attributes.service = service
                attributes.account = account
                #expect(
                    try index.genericPasswordID(service: service, account: account, group: group)
                        == index.id(of: .genericPassword, attributes: attributes, group: group)
                )
            }
        }
    }

    @Test("the password read's UTF-8 check agrees with String(validating:) on random and tricky bytes")
    func passwordTextCheck() {
        func agrees(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBufferPointer { Keychain.text(utf8: $0) } == String(validating: bytes, as: UTF8.self)
        }
        let tricky: [[UInt8]] = [
            [], Array("plain".utf8), Array("é€😀".utf8),
            [0xEF, 0xBF, 0xBD],  // a real U+FFFD, valid
            [0xE0, 0x80, 0x80],  // overlong: repairs to as many bytes as it had
            [0xED, 0xA0, 0x80],  // a UTF-16 surrogate
            [0xC3], [0x61, 0xF0, 0x9F, 0x98],  // cut short
            [0x80], [0xFF, 0xFE], [0xF4, 0x90, 0x80, 0x80],  // stray continuation, never valid, over U+10FFFF
        ]
        for bytes in tricky { #expect(agrees(bytes), "\(bytes)") }
        var generator = SplitMix64(seed: 41)
        let pieces: [[UInt8]] = [
            [0x61], [0xC3, 0xA9], [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80], [0x80], [0xC3], [0xFF],
        ]
        for _ in 0..<2000 {
            let bytes = (0..<Int(generator.next() % 8)).flatMap { _ in pieces[Int(generator.next() % 7)] }
            #expect(agrees(bytes), "\(bytes)")
        }
    }
}
