internal import Foundation

/// Byte counts for people: binary units with one decimal (`1.5 MiB`).
package enum ByteCount {
    /// `bytes` in the largest binary unit that keeps it at or above 1, with one decimal.
    package static func format(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(bytes)
        var unit = 0
        while abs(value) >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}
