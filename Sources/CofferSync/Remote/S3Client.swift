import Foundation
internal import Glibc

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An object in a listing.
package struct S3Object: Sendable, Equatable {
    /// The full key.
    package let key: String
    /// The size in bytes.
    package let size: Int64
    /// The object's entity tag (a digest of its content for a single-part upload): different for
    /// every bundle written under the same name, since each is sealed afresh.
    package var etag: String = ""

    package init(key: String, size: Int64, etag: String = "") {
        self.key = key
        self.size = size
        self.etag = etag
    }
}

/// The S3 operations Coffer uses (PUT, GET, HEAD, DELETE, ListObjectsV2, multipart upload, bucket
/// creation), signed with ``SignatureV4`` and sent through ``HTTPTransport``. Transient failures
/// (5xx, 429, connection errors) are retried with exponential backoff; 403 and 404 become clear
/// errors at once.
package final class S3Client: Sendable {
    /// How many times a request is tried before a transient failure is reported.
    package static let attempts = 5

    package let remote: S3Remote
    private let signer: SignatureV4
    private let transport: HTTPTransport

    /// A client for `remote`.
    package init(_ remote: S3Remote) {
        self.remote = remote
        signer = SignatureV4(credentials: remote.credentials, region: remote.region)
        transport = HTTPTransport()
        uploadPacer = remote.uploadLimit.map { TransferPacer(bytesPerSecond: $0) }
        downloadPacer = remote.downloadLimit.map { TransferPacer(bytesPerSecond: $0) }
    }

    /// What keeps this client's uploads and downloads under the remote's limits.
    private let uploadPacer: TransferPacer?
    private let downloadPacer: TransferPacer?

    // MARK: Objects

    /// Stores `body` under `key` in one request.
    package func put(_ key: String, body: [UInt8]) throws(CofferError) {
        _ = try perform("PUT", key: key, body: body, operation: "store \(key)")
    }

    /// The object's contents, or `nil` if there is no such object. For small objects (heads).
    package func get(_ key: String) throws(CofferError) -> [UInt8]? {
        do {
            return try perform("GET", key: key, operation: "read \(key)").body
        } catch  where error.code == .itemNotFound {
            return nil
        }
    }

    /// The first `count` bytes of the object (fewer if it is shorter).
    package func getPrefix(_ key: String, count: Int) throws(CofferError) -> [UInt8] {
        try perform("GET", key: key, headers: [("Range", "bytes=0-\(count - 1)")], operation: "read \(key)").body
    }

    /// Downloads the object to the file at `path` without holding it in memory.
    package func download(_ key: String, to path: String) throws(CofferError) {
        _ = try perform("GET", key: key, downloadingTo: path, operation: "download \(key)")
    }

    /// The object's size, or `nil` if there is no such object.
    package func size(of key: String) throws(CofferError) -> Int64? {
        try attributes(of: key)?.size
    }

    /// The object's size and entity tag, or `nil` if there is no such object.
    package func attributes(of key: String) throws(CofferError) -> (size: Int64, etag: String?)? {
        do throws(CofferError) {
            let response = try perform("HEAD", key: key, operation: "look up \(key)")
            guard let size = response.headers["content-length"].flatMap({ Int64($0) }) else {
                throw CofferError(.decode, "the object store gave no size for \(key)")
            }
            let etag = response.headers["etag"].map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"'")) }
            return (size, etag)
        } catch  where error.code == .itemNotFound {
            return nil
        }
    }

    /// Deletes the object (deleting a missing object succeeds, as in S3).
    package func delete(_ key: String) throws(CofferError) {
        _ = try perform("DELETE", key: key, operation: "delete \(key)")
    }

    /// Every object whose key starts with `prefix`, in key order (ListObjectsV2, page by page).
    package func list(prefix: String) throws(CofferError) -> [S3Object] {
        var objects: [S3Object] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let response = try perform("GET", key: nil, query: query, operation: "list \(prefix)")
            let xml = Substring(decoding: response.body, as: UTF8.self)
            for entry in S3XML.elements("Contents", in: xml) {
                guard let key = S3XML.value("Key", in: entry),
                    let size = S3XML.value("Size", in: entry).flatMap({ Int64($0) })
                else {
                    throw CofferError(.decode, "the object store's listing of \(prefix) is malformed")
                }
                let etag = S3XML.value("ETag", in: entry) ?? ""
                objects.append(
                    S3Object(key: key, size: size, etag: etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"'")))
                )
            }
            token = S3XML.value("IsTruncated", in: xml) == "true" ? S3XML.value("NextContinuationToken", in: xml) : nil
        } while token != nil
        return objects
    }

    // MARK: Files

    /// Uploads the file at `path` to `key`: in one request up to the part size, else as a multipart
    /// upload reading one part at a time (aborted on failure, so no parts are left behind).
    ///
    /// - Parameter progress: Called with the bytes sent so far.
    package func upload(file path: String, to key: String, progress: SyncProgress? = nil) throws(CofferError) {
        let file = try InputFile(path: path)
        var source = FileDescriptorSource(descriptor: file.descriptor)
        var sink = S3UploadSink(client: self, key: key, progress: progress)
        do throws(CofferError) {
            var part = try source.read(upTo: min(remote.partSize, 1 << 20))
            while !part.isEmpty {
                try part.withBytes { (bytes) throws(CofferError) in try sink.write(bytes) }
                part = try source.read(upTo: 1 << 20)
            }
            try sink.finish()
        } catch {
            sink.abort()
            throw error
        }
    }

    // MARK: Multipart uploads

    /// Starts a multipart upload to `key`; returns its id.
    package func startUpload(_ key: String) throws(CofferError) -> String {
        let initiated = try perform("POST", key: key, query: [("uploads", "")], operation: "start uploading \(key)")
        guard let uploadID = S3XML.value("UploadId", in: Substring(decoding: initiated.body, as: UTF8.self)) else {
            throw CofferError(.decode, "the object store did not return an upload id for \(key)")
        }
        return uploadID
    }

    /// Uploads part `number` (from 1) of an upload; returns its entity tag.
    package func uploadPart(_ key: String, uploadID: String, number: Int, body: [UInt8]) throws(CofferError) -> String {
        let response = try perform(
            "PUT",
            key: key,
            query: [("partNumber", "\(number)"), ("uploadId", uploadID)],
            body: body,
            operation: "upload part \(number) of \(key)"
        )
        guard let etag = response.headers["etag"] else {
            throw CofferError(.decode, "the object store returned no ETag for part \(number) of \(key)")
        }
        return etag
    }

    /// Completes an upload from its parts' entity tags, in order: the object appears whole.
    package func completeUpload(_ key: String, uploadID: String, parts: [String]) throws(CofferError) {
        let manifest =
            "<CompleteMultipartUpload>"
            + parts.enumerated().map {
                "<Part><PartNumber>\($0.offset + 1)</PartNumber><ETag>\(S3XML.escape($0.element))</ETag></Part>"
            }.joined() + "</CompleteMultipartUpload>"
        let completed = try perform(
            "POST",
            key: key,
            query: [("uploadId", uploadID)],
            body: Array(manifest.utf8),
            operation: "complete the upload of \(key)"
        )
        // S3 may answer 200 and still report an error in the body.
        let answer = Substring(decoding: completed.body, as: UTF8.self)
        if !S3XML.elements("Error", in: answer).isEmpty {
            throw failure(
                HTTPResponse(status: 500, headers: [:], body: completed.body),
                "complete the upload of \(key)"
            )
        }
    }

    /// Abandons an upload, so its parts are not kept (best effort: the store expires them otherwise).
    package func abortUpload(_ key: String, uploadID: String) {
        _ = try? perform("DELETE", key: key, query: [("uploadId", uploadID)], operation: "abort the upload of \(key)")
    }

    /// A byte range of the object, if it still has entity tag `etag` (when given).
    ///
    /// - Throws: ``CofferError`` `.itemNotFound` when the object is gone or was replaced.
    package func getRange(_ key: String, _ range: Range<Int64>, etag: String?) throws(CofferError) -> [UInt8] {
        var headers = [("Range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")]
        if let etag { headers.append(("If-Match", "\"\(etag)\"")) }
        return try perform("GET", key: key, headers: headers, operation: "read \(key)").body
    }

    // MARK: Buckets

    /// Creates the bucket unless it exists.
    package func createBucketIfMissing() throws(CofferError) {
        do {
            _ = try perform("HEAD", key: nil, operation: "look up bucket \(remote.location.bucket)")
            return
        } catch  where error.code == .itemNotFound || error.code == .param {
            // Missing: create it below.
        }
        let body =
            remote.region == "us-east-1"
            ? nil
            : Array(
                ("<CreateBucketConfiguration><LocationConstraint>\(S3XML.escape(remote.region))"
                    + "</LocationConstraint></CreateBucketConfiguration>").utf8
            )
        do {
            _ = try perform("PUT", key: nil, body: body, operation: "create bucket \(remote.location.bucket)")
        } catch  where error.code == .duplicateItem {
            // Another process made it between the look-up and the creation: it is there, and ours.
        }
    }

    /// Sets the bucket's policy (a JSON document, as for `s3api put-bucket-policy`): tests use it to
    /// make a store that refuses deletes.
    package func putBucketPolicy(_ json: String) throws(CofferError) {
        _ = try perform(
            "PUT",
            key: nil,
            query: [("policy", "")],
            body: Array(json.utf8),
            operation: "set the policy of bucket \(remote.location.bucket)"
        )
    }

    // MARK: Requests

    /// Sends one signed request, retrying transient failures; returns a 2xx response or throws.
    private func perform(
        _ method: String,
        key: String?,
        query: [(String, String)] = [],
        headers: [(String, String)] = [],
        body: [UInt8]? = nil,
        downloadingTo path: String? = nil,
        operation: String
    ) throws(CofferError) -> HTTPResponse {
        let payloadHash = try body.map { bytes throws(CofferError) in try SignatureV4.hexHash(bytes) }
        if let body, !body.isEmpty { uploadPacer?.pace(body.count) }
        var lastProblem = ""
        for attempt in 0..<Self.attempts {
            if attempt > 0 { backOff(attempt) }
            let request = try signedRequest(
                method,
                key: key,
                query: query,
                headers: headers,
                payloadHash: payloadHash ?? SignatureV4.emptyPayloadHash
            )
            let response: HTTPResponse
            do {
                response =
                    if let path {
                        try transport.download(request, to: path)
                    } else {
                        try transport.send(request, body: body)
                    }
            } catch {
                lastProblem = error.message
                continue
            }
            if (200..<300).contains(response.status) {
                if !response.body.isEmpty { downloadPacer?.pace(response.body.count) }
                return response
            }
            if response.status >= 500 || response.status == 429 {
                lastProblem =
                    "HTTP \(response.status)"
                    + (S3XML.value("Code", in: Substring(decoding: response.body, as: UTF8.self)).map { " \($0)" } ?? "")
                continue
            }
            throw failure(response, operation)
        }
        throw CofferError(
            .io,
            "could not \(operation) at \(remote.endpoint.absoluteString) after \(Self.attempts) tries (\(lastProblem)); "
                + "check that the object store is running and reachable"
        )
    }

    private func backOff(_ attempt: Int) {
        let seconds = min(0.1 * Double(1 << attempt), 4) * Double.random(in: 0.75...1.25)
        usleep(UInt32(seconds * 1_000_000))
    }

    /// The error for a 4xx answer, from the status and the XML error body.
    private func failure(_ response: HTTPResponse, _ operation: String) -> CofferError {
        let xml = Substring(decoding: response.body, as: UTF8.self)
        let code = S3XML.value("Code", in: xml) ?? "HTTP \(response.status)"
        let detail = S3XML.value("Message", in: xml).map { "\(code): \($0)" } ?? code
        let bucket = remote.location.bucket
        switch (response.status, code) {
        case (403, _), (401, _):
            return CofferError(
                .authFailed,
                "the object store refused to \(operation) (\(detail)); check the access key and secret "
                    + "(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or \(InterfaceName.credentialsFile)), the region and the "
                    + "bucket's permissions"
            )
        case (404, "NoSuchBucket"):
            return CofferError(
                .param,
                "bucket '\(bucket)' does not exist at \(remote.endpoint.absoluteString); check the name, or create it "
                    + "(\(InterfaceName.createBucket))"
            )
        case (404, _):
            return CofferError(.itemNotFound, "could not \(operation): no such object (\(detail))")
        case (412, _):
            return CofferError(.itemNotFound, "could not \(operation): the object was replaced meanwhile (\(detail))")
        case (409, "BucketAlreadyOwnedByYou"):
            return CofferError(.duplicateItem, "bucket '\(bucket)' already exists and is yours (\(detail))")
        default:
            return CofferError(.io, "the object store answered \(response.status) to \(operation) (\(detail))")
        }
    }

    /// The URL, headers and signature for one request.
    private func signedRequest(
        _ method: String,
        key: String?,
        query: [(String, String)],
        headers: [(String, String)],
        payloadHash: String
    ) throws(CofferError) -> URLRequest {
        let endpoint = remote.endpoint
        let bucket = remote.location.bucket
        let scheme = endpoint.scheme ?? "https"
        var host = endpoint.host ?? ""
        var path: String
        switch remote.addressing {
        case .path:
            path = "/" + bucket + (key.map { "/" + $0 } ?? "")
        case .virtualHosted:
            host = bucket + "." + host
            path = "/" + (key ?? "")
        }
        let defaultPort = scheme == "https" ? 443 : 80
        let authority = endpoint.port.map { $0 == defaultPort ? host : "\(host):\($0)" } ?? host
        let encodedPath = SignatureV4.encodePath(path)
        let queryString = query.map { "\(SignatureV4.encode($0.0))=\(SignatureV4.encode($0.1))" }.joined(separator: "&")
        guard let url = URL(string: "\(scheme)://\(authority)\(encodedPath)" + (query.isEmpty ? "" : "?\(queryString)"))
        else {
            throw CofferError(.param, "cannot form a request URL from the endpoint \(endpoint.absoluteString)")
        }
        let signing = SignatureV4.Request(
            method: method,
            encodedPath: encodedPath,
            query: query.map { (name: $0.0, value: $0.1) },
            headers: [("host", authority)] + headers.map { (name: $0.0, value: $0.1) },
            payloadHash: payloadHash
        )
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        for (name, value) in try signer.signingHeaders(for: signing, at: Date()) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        return request
    }
}
