/// A closed set of values stored as one byte each (docs/FORMAT.md lists every table): item classes,
/// accessibility classes, attribute tags, sync scopes, protection levels. A type gives each case its
/// `code`; reading one back is the same lookup for all of them. Codes are part of the format: never
/// reuse or renumber one.
package protocol StoredCode: CaseIterable, Equatable {
    /// The byte that stands for this value on disk and in bundles.
    var code: UInt8 { get }
}

extension StoredCode {
    /// The value stored as `code`, or `nil` for a code this version does not know.
    package init?(code: UInt8) {
        guard let match = Self.allCases.first(where: { $0.code == code }) else { return nil }
        self = match
    }
}
