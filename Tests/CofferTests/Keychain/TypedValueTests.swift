import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

/// Typed values in the keychain and the blob tier: Codable round trips, the documented encoding as a
/// known answer, and clear errors for the wrong type or a value too large.
@Suite("Typed values: Codable in the keychain and in blobs")
struct TypedValueTests {
    struct Token: Codable, Equatable {
        var value: String
        var expires: Date
        var scopes: [String]
        var secret: Data
        var refresh: String?
    }

    static let token = Token(
        value: "t-123",
        expires: Date(timeIntervalSinceReferenceDate: 812_345_678.25),
        scopes: ["read", "write"],
        secret: Data([0, 1, 2, 0xff]),
        refresh: nil
    )

    @Test("the encoding is JSON with sorted keys, dates as seconds since 2001, data as base64")
    func knownAnswer() throws {
        let bytes = try TypedValueCoding.encode(Self.token, what: "the token")
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == #"{"expires":812345678.25,"scopes":["read","write"],"secret":"AAEC/w==","value":"t-123"}"#
        )
        #expect(try TypedValueCoding.encode(Self.token, what: "") == bytes)
    }

    @Test("keychain: set and read back, replace, absent is nil, the wrong type is a decode error")
    func keychain() throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        let key = KeychainKey(service: "api", account: "ann")
        #expect(try vault.keychain.value(key, as: Token.self) == nil)
        try vault.keychain.set(Self.token, for: key)
        #expect(try vault.keychain.value(key, as: Token.self) == Self.token)
        var renewed = Self.token
        renewed.refresh = "r-9"
        try vault.keychain.set(renewed, for: key, scope: .deviceBound)
        #expect(try vault.keychain.value(key) == renewed)
        #expect(try vault.keychain.find(.genericPassword(service: "api", account: "ann")).count == 1)
        let wrong = #expect(throws: KeychainError.self) { _ = try vault.keychain.value(key, as: [Int].self) }
        #expect(wrong?.code == .decode && wrong?.message.contains("api/ann") == true)
        // A password is text, not JSON: reading it as a number says so.
        try vault.keychain.setPassword("hunter2", service: "mail", account: "ann")
        #expect(throws: KeychainError.self) {
            _ = try vault.keychain.value(KeychainKey(service: "mail", account: "ann"), as: Int.self)
        }
        // Too large for an item: refused, nothing stored.
        let huge = String(repeating: "x", count: 20_000)
        #expect(throws: KeychainError.self) {
            try vault.keychain.set(huge, for: KeychainKey(service: "big", account: "a"))
        }
        #expect(try vault.keychain.value(KeychainKey(service: "big", account: "a"), as: String.self) == nil)
        // A value JSON cannot hold.
        #expect(throws: KeychainError.self) {
            try vault.keychain.set(Double.nan, for: KeychainKey(service: "n", account: "a"))
        }
    }

    @Test("the async forms round-trip too")
    func asyncForms() async throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        let key = KeychainKey(service: "async", account: "ann")
        try await vault.keychain.set(["a": 1], for: key)
        #expect(try await vault.keychain.value(key, as: [String: Int].self) == ["a": 1])
    }

    @Test("blobs: write a value and read it back; the wrong type is a decode error naming the blob")
    func blobs() throws {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        let settings = ["theme": "dark", "font": "mono"]
        let info = try vault.blobs.write("settings.json", encoding: settings)
        #expect(info.size == Int64(try TypedValueCoding.encode(settings, what: "").count))
        #expect(try vault.blobs.value("settings.json", as: [String: String].self) == settings)
        #expect(
            String(decoding: try vault.blobs.data("settings.json"), as: UTF8.self) == #"{"font":"mono","theme":"dark"}"#
        )
        let error = #expect(throws: CofferError.self) { _ = try vault.blobs.value("settings.json", as: [Int].self) }
        #expect(error?.code == .decode && error?.message.contains("settings.json") == true)
    }
}
