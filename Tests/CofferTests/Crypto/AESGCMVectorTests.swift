import Foundation
import Testing

@testable import Coffer

/// AES-256-GCM against NIST CAVP and Wycheproof known answers.
@Suite("AES-256-GCM known answers")
struct AESGCMVectorTests {
    /// The sealed layout is nonce ‖ ciphertext ‖ tag; build it from a vector's parts.
    static func sealed(_ record: [String: String]) -> [UInt8] {
        [UInt8](hex: record["IV"]!) + [UInt8](hex: record["CT"]!) + [UInt8](hex: record["Tag"]!)
    }

    @Test("NIST CAVP gcmEncryptExtIV256: every case encrypts to the expected ciphertext and tag")
    func nistEncrypt() throws {
        let records = try Vectors.records("gcmEncryptExtIV256.rsp")
        #expect(records.count == 375)
        let gcm = try AESGCM()
        for record in records {
            let key = SecureBytes(copying: [UInt8](hex: record["Key"]!))
            let output = try gcm.seal(
                [UInt8](hex: record["PT"]!),
                key: key,
                nonce: [UInt8](hex: record["IV"]!),
                authenticating: [UInt8](hex: record["AAD"]!)
            )
            #expect(output == Self.sealed(record), "Count \(record["Count"]!)")
        }
    }

    @Test("NIST CAVP gcmDecrypt256: valid cases decrypt, every FAIL case is rejected")
    func nistDecrypt() throws {
        let records = try Vectors.records("gcmDecrypt256.rsp")
        #expect(records.count == 375)
        let gcm = try AESGCM()
        var rejected = 0
        for record in records {
            let key = SecureBytes(copying: [UInt8](hex: record["Key"]!))
            let aad = [UInt8](hex: record["AAD"]!)
            if record["FAIL"] != nil {
                #expect(throws: CryptoError.self, "Count \(record["Count"]!) must fail") {
                    _ = try gcm.open(Self.sealed(record), key: key, authenticating: aad)
                }
                rejected += 1
            } else {
                let plaintext = try gcm.open(Self.sealed(record), key: key, authenticating: aad)
                #expect(plaintext == [UInt8](hex: record["PT"]!), "Count \(record["Count"]!)")
            }
        }
        #expect(rejected > 100, "the file's FAIL cases were all exercised")
    }

    struct WycheproofFile: Decodable {
        struct Group: Decodable {
            let tests: [Case]
        }
        struct Case: Decodable {
            let tcId: Int
            let comment: String
            let key, iv, aad, msg, ct, tag: String
            let result: String
        }
        let testGroups: [Group]
    }

    @Test("Wycheproof aes_gcm_test (256-bit key, 96-bit IV, 128-bit tag): valid cases match, invalid ones are rejected")
    func wycheproof() throws {
        let file = try JSONDecoder().decode(WycheproofFile.self, from: try Vectors.data("wycheproof-aes-gcm-256.json"))
        let gcm = try AESGCM()
        var invalid = 0
        for test in file.testGroups.flatMap(\.tests) {
            let key = SecureBytes(copying: [UInt8](hex: test.key))
            let sealed = [UInt8](hex: test.iv) + [UInt8](hex: test.ct) + [UInt8](hex: test.tag)
            let aad = [UInt8](hex: test.aad)
            if test.result == "invalid" {
                invalid += 1
                #expect(throws: CryptoError.self, "tcId \(test.tcId) (\(test.comment)) must fail") {
                    _ = try gcm.open(sealed, key: key, authenticating: aad)
                }
            } else {
                #expect(
                    try gcm.open(sealed, key: key, authenticating: aad) == [UInt8](hex: test.msg),
                    "tcId \(test.tcId)"
                )
                let resealed = try gcm.seal(
                    [UInt8](hex: test.msg),
                    key: key,
                    nonce: [UInt8](hex: test.iv),
                    authenticating: aad
                )
                #expect(resealed == sealed, "tcId \(test.tcId)")
            }
        }
        #expect(invalid == 27)
    }
}
