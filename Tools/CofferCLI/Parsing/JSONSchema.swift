/// The layout of `coffer`'s JSON output (`--json`), versioned as coffer-bench's is: fields may be
/// added within a version, never renamed or removed; `coffer --version --json` names the version.
/// docs/CLI.md prints the conventions every command follows.
enum JSONSchema {
    /// The version of the layout.
    static let version = 1

    /// The rules every command's JSON follows, one sentence each.
    static let conventions = [
        "Keys are camelCase English words, the same word for the same thing in every command.",
        "A count is the plural noun of what it counts (blobs, chunks, snapshots, items), never a name ending in Count.",
        "Times are ISO 8601 in UTC (2026-12-01T09:12:44Z), named by what happened (created, modified, added).",
        "Ids (vaults, devices, sync groups, snapshots) are lower-case hexadecimal, UUIDs with their hyphens.",
        "A listing is an array of objects, one a thing; a command's result is one object.",
    ]

    /// `json` with the UUID of each field holding a vault's, a device's or a sync group's id in lower
    /// case, as listings print them: the library's own
    /// summaries encode `UUID`s in upper case.
    static func normalizingIDs(_ json: String) -> String {
        json.replacing(/"(vaultID|deviceID|syncGroupID|sourceDevice|addedBy|approver)" : "([0-9A-F-]{36})"/) { match in
            "\"\(match.1)\" : \"\(match.2.lowercased())\""
        }
    }
}
