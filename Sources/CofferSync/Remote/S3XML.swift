/// Reads the few elements Coffer needs from S3's XML answers (list results, multipart upload ids,
/// errors). S3's answers are flat and regular; a small scanner keeps an XML parser, and its
/// dependencies, out of the library.
package enum S3XML {
    /// The contents of each `<name>…</name>` element in `xml`, in order; nested elements are kept as
    /// text.
    package static func elements(_ name: String, in xml: Substring) -> [Substring] {
        var found: [Substring] = []
        var rest = xml[...]
        let close = "</\(name)>"
        while let open = rest.range(of: "<\(name)") {
            let afterName = rest[open.upperBound...]
            guard let next = afterName.first, next == ">" || next == " " || next == "/" else {
                rest = afterName
                continue
            }
            guard let tagEnd = afterName.firstIndex(of: ">") else { break }
            if afterName[afterName.startIndex..<tagEnd].hasSuffix("/") {
                found.append(afterName[tagEnd..<tagEnd])
                rest = afterName[afterName.index(after: tagEnd)...]
                continue
            }
            let content = afterName[afterName.index(after: tagEnd)...]
            guard let end = content.range(of: close) else { break }
            found.append(content[..<end.lowerBound])
            rest = content[end.upperBound...]
        }
        return found
    }

    /// The text of the first `<name>` element, with entities decoded.
    package static func value(_ name: String, in xml: Substring) -> String? {
        elements(name, in: xml).first.map { unescape($0) }
    }

    /// Decodes the five predefined entities and numeric character references.
    package static func unescape(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var result = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            result += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";") else { break }
            let entity = rest[rest.index(after: amp)..<semicolon]
            let number =
                entity.hasPrefix("#x") ? UInt32(entity.dropFirst(2), radix: 16) : UInt32(entity.dropFirst(), radix: 10)
            if let predefined = entities.first(where: { $0.name == entity }) {
                result.append(predefined.character)
            } else if entity.hasPrefix("#"), let number, let scalar = Unicode.Scalar(number) {
                result.unicodeScalars.append(scalar)
            } else {
                result += rest[amp...semicolon]
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return result + rest
    }

    /// `text` with `&`, `<`, `>`, `"` and `'` escaped, for request bodies.
    package static func escape(_ text: String) -> String {
        var result = ""
        for character in text {
            if let predefined = entities.first(where: { $0.character == character }) {
                result += "&\(predefined.name);"
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// XML's five predefined entities.
    private static let entities: [(character: Character, name: Substring)] = [
        ("&", "amp"), ("<", "lt"), (">", "gt"), ("\"", "quot"), ("'", "apos"),
    ]
}
