import Foundation

/// Where a sync group's objects live under an ``S3Location`` (docs/FORMAT.md, "Remote layout"):
///
/// ```
/// PREFIX/<device id>/<first sequence, 20 digits>-<last sequence, 20 digits>.bundle
/// PREFIX/<device id>/head
/// ```
///
/// Names reveal device ids and sequence numbers, nothing else; zero-padding makes key order the
/// numeric order.
struct RemoteLayout {
    let location: S3Location

    /// A bundle object's sequence range, as its name carries it.
    struct BundleName: Comparable, Hashable {
        let first: UInt64
        let last: UInt64

        var fileName: String { String(format: "%020llu-%020llu.bundle", first, last) }

        /// Parses `<first>-<last>.bundle`; `nil` for anything else.
        init?(fileName: Substring) {
            guard fileName.hasSuffix(".bundle") else { return nil }
            let parts = fileName.dropLast(".bundle".count).split(separator: "-")
            guard parts.count == 2, parts.allSatisfy({ $0.count == 20 }), let first = UInt64(parts[0]),
                let last = UInt64(parts[1]), first >= 1
            else { return nil }
            self.init(first: first, last: last)
        }

        init(first: UInt64, last: UInt64) {
            self.first = first
            self.last = last
        }

        /// By the last change covered, then the first: the order bundles are applied in.
        static func < (lhs: BundleName, rhs: BundleName) -> Bool {
            (lhs.last, lhs.first) < (rhs.last, rhs.first)
        }
    }

    /// What one device has put under the prefix.
    struct DeviceObjects {
        var hasHead = false
        var bundles: [BundleName] = []
        /// Each bundle's entity tag, from the listing.
        var etags: [BundleName: String] = [:]
    }

    /// The prefix every object of the layout starts with.
    var listingPrefix: String { location.prefix.isEmpty ? "" : location.prefix + "/" }

    func folder(_ device: UUID) -> String { location.key(device.uuidString.lowercased()) }

    func headKey(_ device: UUID) -> String { folder(device) + "/head" }

    func bundleKey(_ device: UUID, _ name: BundleName) -> String { folder(device) + "/" + name.fileName }

    /// Sorts a listing into devices; objects that are not part of the layout are ignored.
    func devices(in objects: [S3Object]) -> [UUID: DeviceObjects] {
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
