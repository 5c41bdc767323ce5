/// A count with its noun in the number the count needs, for messages: `1 file`, `3 files`,
/// `1 directory`, `0 directories`. The plural is the singular with `s` unless given.
///
/// ```swift
/// counted(1, "path")                            // "1 path"
/// counted(2, "directory", "directories")        // "2 directories"
/// ```
func counted(_ count: some BinaryInteger, _ singular: String, _ plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}
