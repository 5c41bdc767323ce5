package import Foundation

/// AWS Signature Version 4 for S3 requests ("Authenticating Requests (AWS Signature Version 4)", header
/// form): a canonical form of the request, hashed into a string to sign, signed with a key derived
/// from the secret for the day, region and service.
///
/// The payload is always hashed in full (`x-amz-content-sha256`), so the store checks every body it
/// receives; bodies are bounded by the multipart part size, so this costs no memory.
package struct SignatureV4: Sendable {
    package static let algorithm = "AWS4-HMAC-SHA256"
    package static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    package let credentials: S3Credentials
    package let region: String

    package init(credentials: S3Credentials, region: String) {
        self.credentials = credentials
        self.region = region
    }
    package let service = "s3"

    /// A request to sign: everything the canonical request covers.
    package struct Request {
        package var method: String
        /// The path exactly as sent: already percent-encoded (``SignatureV4/encodePath(_:)``).
        package var encodedPath: String
        /// Query parameters, not encoded; `""` for a parameter without a value.
        package var query: [(name: String, value: String)]
        /// Headers to sign, `host` among them; names in any case.
        package var headers: [(name: String, value: String)]
        /// Hex SHA-256 of the body.
        package var payloadHash: String

        package init(
            method: String,
            encodedPath: String,
            query: [(name: String, value: String)],
            headers: [(name: String, value: String)],
            payloadHash: String
        ) {
            self.method = method
            self.encodedPath = encodedPath
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }
    }

    /// The headers to add to `request` at `date`: `x-amz-date`, `x-amz-content-sha256`, the session
    /// token if any, and `Authorization`.
    package func signingHeaders(
        for request: Request,
        at date: Date
    ) throws(CofferError) -> [(name: String, value: String)] {
        let (timestamp, day) = Self.timestamps(date)
        var signed = request
        signed.headers.append(("x-amz-date", timestamp))
        signed.headers.append(("x-amz-content-sha256", request.payloadHash))
        if let token = credentials.sessionToken { signed.headers.append(("x-amz-security-token", token)) }
        let (canonical, signedHeaders) = Self.canonicalRequest(signed)
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = [Self.algorithm, timestamp, scope, try Self.hexHash(Array(canonical.utf8))]
            .joined(separator: "\n")
        let signature = try signingKey(day: day) { key throws(CofferError) in
            try Self.crypto { () throws(CryptoError) in
                try HMACSHA256.authenticationCode(for: Array(stringToSign.utf8), key: key)
            }
        }
        let authorization =
            "\(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope), "
            + "SignedHeaders=\(signedHeaders), Signature=\(signature.hexEncoded)"
        return Array(signed.headers.dropFirst(request.headers.count)) + [("Authorization", authorization)]
    }

    /// The canonical request and its signed-headers list.
    package static func canonicalRequest(_ request: Request) -> (String, String) {
        let encodedQuery: [(name: String, value: String)] = request.query.map { (encode($0.name), encode($0.value)) }
        let sortedQuery = encodedQuery.sorted { $0.name == $1.name ? $0.value < $1.value : $0.name < $1.name }
        let query = sortedQuery.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
        let headers = request.headers
            .map { (name: $0.name.lowercased(), value: collapseSpaces($0.value)) }
            .sorted { $0.name < $1.name }
        let signedHeaders = headers.map(\.name).joined(separator: ";")
        let canonical = [
            request.method,
            request.encodedPath,
            query,
            headers.map { "\($0.name):\($0.value)\n" }.joined(),
            signedHeaders,
            request.payloadHash,
        ].joined(separator: "\n")
        return (canonical, signedHeaders)
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters, as SigV4 requires.
    package static func encode(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }

    /// A path with each segment encoded and the slashes kept.
    package static func encodePath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { encode(String($0)) }.joined(separator: "/")
    }

    /// Hex SHA-256 of `bytes`.
    package static func hexHash(_ bytes: some ContiguousBytes) throws(CofferError) -> String {
        try crypto { () throws(CryptoError) in try SHA256.hash(bytes) }.hexEncoded
    }

    /// `HMAC(HMAC(HMAC(HMAC("AWS4" + secret, day), region), service), "aws4_request")`, handed to
    /// `body` and wiped afterwards.
    private func signingKey<R>(
        day: String,
        _ body: ([UInt8]) throws(CofferError) -> R
    ) throws(CofferError) -> R {
        var key = Array("AWS4".utf8)
        credentials.secretAccessKey.withUnsafeBytes { key.append(contentsOf: $0) }
        defer { key.wipe() }
        for label in [day, region, service, "aws4_request"] {
            let next = try Self.crypto { () throws(CryptoError) in
                try HMACSHA256.authenticationCode(for: Array(label.utf8), key: key)
            }
            key.wipe()
            key = next
        }
        return try body(key)
    }

    /// `20130524T000000Z` and `20130524` for `date`, in UTC.
    package static func timestamps(_ date: Date) -> (String, String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let day = String(format: "%04d%02d%02d", parts.year!, parts.month!, parts.day!)
        return (day + String(format: "T%02d%02d%02dZ", parts.hour!, parts.minute!, parts.second!), day)
    }

    private static func collapseSpaces(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }

    private static func crypto<R>(_ body: () throws(CryptoError) -> R) throws(CofferError) -> R {
        do {
            return try body()
        } catch {
            throw CofferError(.internalError, "signing an S3 request failed: \(error)", underlying: error)
        }
    }
}
