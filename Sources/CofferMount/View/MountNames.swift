package import Foundation

/// How the mounted view names what has no file name of its own: snapshot names and blob names may
/// hold `/` (a snapshot is named by its directory's path by default), and snapshots of one name are
/// told apart by their time.
package enum MountNames {
    /// `name` as one path component: `%` as `%25`, `/` as `%2F`, and a name of `.` or `..` (or
    /// empty) with its dots as `%2E`, so that every name maps to exactly one component and back.
    package static func component(for name: String) -> [UInt8] {
        if name.isEmpty || name == "." || name == ".." {
            return Array(String(repeating: "%2E", count: name.count).utf8) + (name.isEmpty ? Array("%".utf8) : [])
        }
        var bytes: [UInt8] = []
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "%"): bytes += Array("%25".utf8)
            case UInt8(ascii: "/"): bytes += Array("%2F".utf8)
            default: bytes.append(byte)
            }
        }
        return bytes
    }

    /// The name a component stands for: ``component(for:)`` undone; `nil` if the component is not
    /// one that function makes (an unknown escape, or one written where none is needed).
    package static func name(fromComponent component: [UInt8]) -> String? {
        var bytes: [UInt8] = []
        var index = 0
        while index < component.count {
            if component[index] == UInt8(ascii: "%") {
                let escape = String(decoding: component[index..<min(index + 3, component.count)], as: UTF8.self)
                switch escape {
                case "%25": bytes.append(UInt8(ascii: "%"))
                case "%2F": bytes.append(UInt8(ascii: "/"))
                case "%2E": bytes.append(UInt8(ascii: "."))
                case "%": break
                default: return nil
                }
                index += escape.utf8.count
            } else {
                bytes.append(component[index])
                index += 1
            }
        }
        guard let name = String(validating: bytes, as: UTF8.self), self.component(for: name) == component else {
            return nil
        }
        return name
    }

    /// A snapshot's time as its directory's name: UTC to the second (`2026-12-02T10:04:50Z`).
    package static func time(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String { value.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        let year = parts.year.map { String($0) } ?? "0000"
        return
            "\(year)-\(two(parts.month))-\(two(parts.day))T\(two(parts.hour)):\(two(parts.minute)):\(two(parts.second))Z"
    }
}
