import Foundation
import Testing

@testable import Coffer

@Suite("S3 request signing: AWS's published examples and botocore's answers")
struct SignatureV4Tests {
    /// 2013-05-24T00:00:00Z, the date of AWS's examples.
    static let date = Date(timeIntervalSince1970: 1_369_353_600)

    static func signer(token: String? = nil) throws -> SignatureV4 {
        SignatureV4(
            credentials: try S3Credentials(
                accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                sessionToken: token
            ),
            region: "us-east-1"
        )
    }

    /// The `Authorization` header for a request, by the same code path the client uses.
    static func authorization(
        _ method: String,
        host: String,
        path: String,
        query: [(String, String)] = [],
        headers: [(String, String)] = [],
        body: [UInt8] = [],
        token: String? = nil
    ) throws -> String {
        let request = SignatureV4.Request(
            method: method,
            encodedPath: SignatureV4.encodePath(path),
            query: query.map { (name: $0.0, value: $0.1) },
            headers: [("host", host)] + headers.map { (name: $0.0, value: $0.1) },
            payloadHash: try SignatureV4.hexHash(body)
        )
        let added = try signer(token: token).signingHeaders(for: request, at: date)
        return try #require(added.first { $0.name == "Authorization" }).value
    }

    @Test("AWS's GET Object example: canonical request, string to sign and signature")
    func getObjectExample() throws {
        let request = SignatureV4.Request(
            method: "GET",
            encodedPath: "/test.txt",
            query: [],
            headers: [
                ("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"),
                ("x-amz-content-sha256", SignatureV4.emptyPayloadHash), ("x-amz-date", "20130524T000000Z"),
            ],
            payloadHash: SignatureV4.emptyPayloadHash
        )
        let (canonical, signed) = SignatureV4.canonicalRequest(request)
        #expect(signed == "host;range;x-amz-content-sha256;x-amz-date")
        #expect(
            try SignatureV4.hexHash(Array(canonical.utf8))
                == "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"
        )
        let authorization = try Self.authorization(
            "GET",
            host: "examplebucket.s3.amazonaws.com",
            path: "/test.txt",
            headers: [("Range", "bytes=0-9")]
        )
        #expect(
            authorization
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        )
    }

    @Test("AWS's list example, and Coffer's own requests as botocore signs them (Tools/vectors/s3-sigv4-kat)")
    func botocoreAnswers() throws {
        let cases: [(String, String, String, [(String, String)], [UInt8], String?, String)] = [
            (
                "GET", "examplebucket.s3.amazonaws.com", "/", [("max-keys", "2"), ("prefix", "J")], [], nil,
                "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
            ),
            (
                "PUT", "127.0.0.1:8333", "/coffer/team a/dev/00000000000000000001-00000000000000000009.bundle", [],
                Array("bundle bytes".utf8), nil, "9125dd92821886058265d0040d6530b9bf4bb20e2636f9944cd74e93652e504e"
            ),
            (
                "POST", "127.0.0.1:8333", "/coffer/k", [("uploads", "")], [], nil,
                "79490342d3d20c48307d4b85646889d959cca2674471ea4c1abe8bae7089ecc9"
            ),
            (
                "PUT", "127.0.0.1:8333", "/coffer/k", [("partNumber", "2"), ("uploadId", "a/b=")], Array("part".utf8),
                "session-token-example", "bd30b3e50db70343d1b47f38df75e9713cd8d2481bccc2a26ec8ebdfc5b45ebe"
            ),
        ]
        for (method, host, path, query, body, token, signature) in cases {
            let authorization = try Self.authorization(
                method,
                host: host,
                path: path,
                query: query,
                body: body,
                token: token
            )
            #expect(authorization.hasSuffix("Signature=\(signature)"), "\(method) \(path)")
        }
    }

    @Test("Encoding keeps only RFC 3986's unreserved characters; paths keep their slashes")
    func encoding() {
        #expect(SignatureV4.encode("a b/c=d~e_f.g-h") == "a%20b%2Fc%3Dd~e_f.g-h")
        #expect(SignatureV4.encode("é") == "%C3%A9")
        #expect(SignatureV4.encodePath("/bucket/a b/c+d") == "/bucket/a%20b/c%2Bd")
    }
}
