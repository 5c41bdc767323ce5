import Dispatch
package import Foundation

#if canImport(FoundationNetworking)
package import FoundationNetworking
#endif

/// One HTTP exchange's outcome.
package struct HTTPResponse: Sendable {
    /// The status code.
    package var status: Int
    /// Response headers, names in lower case.
    package var headers: [String: String]
    /// The body, unless it was written to a file.
    package var body: [UInt8]

    package init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Why an exchange produced no response at all: the connection failed or timed out.
package struct HTTPTransportError: Error, Sendable {
    package let message: String

    package init(message: String) {
        self.message = message
    }
}

/// The one place Coffer speaks HTTP: Foundation's URLSession (FoundationNetworking on Linux), called
/// synchronously, since every caller is already on a thread of its own (the async forms offload).
package final class HTTPTransport: Sendable {
    private let session: URLSession

    /// A session with no cookies, cache or credential store, and `timeout` seconds per request.
    package init(timeout: TimeInterval = 120) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    /// Sends `request` with `body` and returns the response with its whole body (small: S3's XML
    /// answers and objects fetched into memory).
    package func send(_ request: URLRequest, body: [UInt8]?) throws(HTTPTransportError) -> HTTPResponse {
        let outcome = Outcome()
        let completion: @Sendable (Data?, URLResponse?, (any Error)?) -> Void = { data, response, error in
            outcome.finish(Self.response(response, body: data.map { [UInt8]($0) } ?? [], error: error))
        }
        let task =
            if let body {
                session.uploadTask(with: request, from: Data(body), completionHandler: completion)
            } else {
                session.dataTask(with: request, completionHandler: completion)
            }
        task.resume()
        return try outcome.wait()
    }

    /// Sends `request` and, for a 2xx answer, moves the body (spooled to a file by URLSession, so
    /// memory stays bounded) to `path`; other answers come back with their body in memory.
    package func download(_ request: URLRequest, to path: String) throws(HTTPTransportError) -> HTTPResponse {
        let outcome = Outcome()
        let task = session.downloadTask(with: request) { location, response, error in
            guard let location, error == nil, let http = response as? HTTPURLResponse else {
                outcome.finish(Self.response(response, body: [], error: error))
                return
            }
            if (200..<300).contains(http.statusCode) {
                let files = FileManager.default
                try? files.removeItem(atPath: path)
                do {
                    try files.moveItem(at: location, to: URL(fileURLWithPath: path))
                } catch {
                    outcome.finish(
                        .failure(HTTPTransportError(message: "cannot keep the download at \(path): \(error)"))
                    )
                    return
                }
                outcome.finish(Self.response(response, body: [], error: nil))
            } else {
                let body = (try? Data(contentsOf: location)).map { [UInt8]($0) } ?? []
                outcome.finish(Self.response(response, body: body, error: nil))
            }
        }
        task.resume()
        return try outcome.wait()
    }

    private static func response(
        _ response: URLResponse?,
        body: [UInt8],
        error: (any Error)?
    ) -> Result<HTTPResponse, HTTPTransportError> {
        if let error { return .failure(HTTPTransportError(message: error.localizedDescription)) }
        guard let http = response as? HTTPURLResponse else {
            return .failure(HTTPTransportError(message: "the answer was not HTTP"))
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return .success(HTTPResponse(status: http.statusCode, headers: headers, body: body))
    }

    /// A completion handed from URLSession's delegate queue to the waiting caller.
    private final class Outcome: Sendable {
        private let result = Locked<Result<HTTPResponse, HTTPTransportError>?>(nil)
        private let done = DispatchSemaphore(value: 0)

        package func finish(_ value: Result<HTTPResponse, HTTPTransportError>) {
            result.withLock { $0 = value }
            done.signal()
        }

        package func wait() throws(HTTPTransportError) -> HTTPResponse {
            done.wait()
            return try result.withLock { $0! }.get()
        }
    }
}
