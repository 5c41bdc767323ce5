internal import Coffer

/// What `coffer --version --json` prints: the release and the newest formats it reads and writes.
struct VersionReport: Encodable {
    /// The version of this JSON's layout (see docs/CLI.md, "JSON output").
    let schemaVersion = JSONSchema.version
    /// The release, `0.11.0`.
    let version = CofferCommand.release
    /// The newest vault format it opens.
    let vaultFormat = Int(Schema.formatVersion)
    /// The bundle format it writes.
    let bundleFormat = Int(BundleHeader.version)
}
