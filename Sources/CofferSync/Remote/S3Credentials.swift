public import Foundation

/// The keys that sign requests to an S3-compatible object store.
///
/// Read them the way the AWS tools do:
///
/// ```swift
/// let credentials = try S3Credentials.fromEnvironment()          // AWS_ACCESS_KEY_ID, ...
/// let fromFile = try S3Credentials.load(file: URL(fileURLWithPath: "/home/ann/.aws/credentials"))
/// ```
///
/// The secret is kept in ``SecureBytes`` (wiped when the last copy goes) and never printed.
public struct S3Credentials: Sendable, CustomStringConvertible {
    /// The access key id (`AWS_ACCESS_KEY_ID`), sent in every request's `Authorization` header.
    public let accessKeyID: String
    /// The secret access key (`AWS_SECRET_ACCESS_KEY`); only keys derived from it leave the process.
    public let secretAccessKey: SecureBytes
    /// A temporary session token (`AWS_SESSION_TOKEN`), if the keys are temporary ones.
    public let sessionToken: String?
    /// The region the file or environment named (`AWS_REGION`, `AWS_DEFAULT_REGION` or a profile's
    /// `region`), if any.
    public let region: String?

    /// Credentials given directly.
    ///
    /// - Throws: ``CofferError`` `.param` if either key is empty or the access key id is not printable
    ///   ASCII without spaces.
    public init(
        accessKeyID: String,
        secretAccessKey: String,
        sessionToken: String? = nil,
        region: String? = nil
    ) throws(CofferError) {
        guard !accessKeyID.isEmpty, accessKeyID.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x2f }) else {
            throw CofferError(
                .param,
                "the S3 access key id '\(accessKeyID)' is empty or holds characters an access key cannot have"
            )
        }
        guard !secretAccessKey.isEmpty else {
            throw CofferError(.param, "the S3 secret access key is empty; set AWS_SECRET_ACCESS_KEY")
        }
        self.accessKeyID = accessKeyID
        self.secretAccessKey = SecureBytes(copying: Array(secretAccessKey.utf8))
        self.sessionToken = sessionToken.flatMap { $0.isEmpty ? nil : $0 }
        self.region = region.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Reads `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` and `AWS_REGION` (or
    /// `AWS_DEFAULT_REGION`).
    ///
    /// - Parameter environment: The variables to read; the process's by default.
    /// - Throws: ``CofferError`` `.param` naming the variable that is missing.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(CofferError) -> S3Credentials {
        guard let accessKey = environment["AWS_ACCESS_KEY_ID"], !accessKey.isEmpty,
            let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty
        else {
            throw CofferError(
                .param,
                "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give them with \(InterfaceName.credentialsFile)"
            )
        }
        return try S3Credentials(
            accessKeyID: accessKey,
            secretAccessKey: secret,
            sessionToken: environment["AWS_SESSION_TOKEN"],
            region: environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"]
        )
    }

    /// Reads a profile from an AWS shared credentials file (`~/.aws/credentials` format):
    ///
    /// ```ini
    /// [default]
    /// aws_access_key_id = AKIA...
    /// aws_secret_access_key = ...
    /// region = eu-west-1
    /// ```
    ///
    /// - Parameters:
    ///   - file: The file.
    ///   - profile: The section to read: `AWS_PROFILE` if set, else `default`.
    /// - Throws: ``CofferError`` `.param` if the file cannot be read, has no such profile, or the
    ///   profile lacks a key (each naming the file and profile).
    public static func load(
        file: URL,
        profile: String = ProcessInfo.processInfo.environment["AWS_PROFILE"] ?? "default"
    ) throws(CofferError) -> S3Credentials {
        let text: String
        do {
            text = try String(contentsOf: file, encoding: .utf8)
        } catch {
            throw CofferError(.param, "cannot read the credentials file \(file.path): \(error.localizedDescription)")
        }
        var section: String?
        var values: [String: String] = [:]
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                    .replacingOccurrences(of: "profile ", with: "")
                continue
            }
            guard section == profile, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            values[key] = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        guard let accessKey = values["aws_access_key_id"], let secret = values["aws_secret_access_key"] else {
            throw CofferError(
                .param,
                "the credentials file \(file.path) has no profile '\(profile)' with aws_access_key_id and "
                    + "aws_secret_access_key"
            )
        }
        return try S3Credentials(
            accessKeyID: accessKey,
            secretAccessKey: secret,
            sessionToken: values["aws_session_token"],
            region: values["region"]
        )
    }

    /// The access key id only; the secret is never printed.
    public var description: String { "S3Credentials(\(accessKeyID))" }
}
