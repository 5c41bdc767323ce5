package import Foundation

/// Where a sync group's objects live under an ``S3Location`` (docs/FORMAT.md, "Remote layout"):
///
/// ```
/// PREFIX/<device id>/<first sequence, 20 digits>-<last sequence, 20 digits>.bundle
/// PREFIX/<device id>/head
/// ```
///
/// Names reveal device ids and sequence numbers, nothing else; zero-padding makes key order the
/// numeric order.
package struct RemoteLayout {
    package let location: S3Location

    package init(location: S3Location) {
        self.location = location
    }

    /// The largest change sequence an object in the store may name. No device makes 2^63 changes: a
    /// larger number is damage or forgery (someone holding a device's keys can sign any), and the
    /// arithmetic on sequences (the next one, a bundle past the last) must not overflow on it.
    package static let largestSequence = UInt64(Int64.max)

    /// `text` as a change sequence an object in the store may name (``largestSequence``), or `nil`.
    package static func sequence(_ text: some StringProtocol) -> UInt64? {
        UInt64(text).flatMap { $0 <= largestSequence ? $0 : nil }
    }

    /// A bundle object's sequence range, as its name carries it.
    package struct BundleName: Comparable, Hashable {
        package let first: UInt64
        package let last: UInt64

        package var fileName: String { String(format: "%020llu-%020llu.bundle", first, last) }

        /// Parses `<first>-<last>.bundle`; `nil` for anything else.
        package init?(fileName: Substring) {
            guard fileName.hasSuffix(".bundle") else { return nil }
            let parts = fileName.dropLast(".bundle".count).split(separator: "-")
            guard parts.count == 2, parts.allSatisfy({ $0.count == 20 }), let first = RemoteLayout.sequence(parts[0]),
                let last = RemoteLayout.sequence(parts[1]), first >= 1
            else { return nil }
            self.init(first: first, last: last)
        }

        package init(first: UInt64, last: UInt64) {
            self.first = first
            self.last = last
        }

        /// By the last change covered, then the first: the order bundles are applied in.
        package static func < (lhs: BundleName, rhs: BundleName) -> Bool {
            (lhs.last, lhs.first) < (rhs.last, rhs.first)
        }
    }

    /// What one device has put under the prefix.
    package struct DeviceObjects {
        package var hasHead = false
        package var bundles: [BundleName] = []
        /// Each bundle's entity tag, from the listing.
        package var etags: [BundleName: String] = [:]

        package init(bundles: [BundleName] = [], etags: [BundleName: String] = [:]) {
            self.bundles = bundles
            self.etags = etags
        }
    }

    /// The prefix every object of the layout starts with.
    package var listingPrefix: String { location.prefix.isEmpty ? "" : location.prefix + "/" }

    package func folder(_ device: UUID) -> String { location.key(device.uuidString.lowercased()) }

    package func headKey(_ device: UUID) -> String { folder(device) + "/head" }

    package func bundleKey(_ device: UUID, _ name: BundleName) -> String { folder(device) + "/" + name.fileName }

    /// The folder of checkpoints (docs/FORMAT.md, "Compaction").
    package var checkpointFolder: String { location.key("checkpoints") }

    /// The bundle of checkpoint `id`.
    package func checkpointBundleKey(_ id: String) -> String { checkpointFolder + "/\(id).bundle" }

    /// The cut of checkpoint `id`, written after its bundle.
    package func checkpointCutKey(_ id: String) -> String { checkpointFolder + "/\(id).cut" }

    /// The checkpoints in a listing, by id: whether each has its cut (is complete) and its bundle.
    package func checkpoints(in objects: [S3Object]) -> [String: (hasCut: Bool, hasBundle: Bool)] {
        var checkpoints: [String: (hasCut: Bool, hasBundle: Bool)] = [:]
        for object in objects {
            let relative = object.key.dropFirst(listingPrefix.count).split(separator: "/")
            guard relative.count == 2, relative[0] == "checkpoints" else { continue }
            let name = relative[1]
            for (suffix, isCut) in [(".cut", true), (".bundle", false)] where name.hasSuffix(suffix) {
                let id = String(name.dropLast(suffix.count))
                guard id.count == 32, id.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { continue }
                var entry = checkpoints[id] ?? (false, false)
                if isCut { entry.hasCut = true } else { entry.hasBundle = true }
                checkpoints[id] = entry
            }
        }
        return checkpoints
    }

    /// Sorts a listing into devices; objects that are not part of the layout are ignored.
    package func devices(in objects: [S3Object]) -> [UUID: DeviceObjects] {
        var devices: [UUID: DeviceObjects] = [:]
        for object in objects {
            let relative = object.key.dropFirst(listingPrefix.count).split(separator: "/")
            guard relative.count == 2, let device = UUID(uuidString: String(relative[0])) else { continue }
            if relative[1] == "head" {
                devices[device, default: DeviceObjects()].hasHead = true
            } else if let name = BundleName(fileName: relative[1]) {
                devices[device, default: DeviceObjects()].bundles.append(name)
                devices[device, default: DeviceObjects()].etags[name] = object.etag
            }
        }
        return devices
    }
}
