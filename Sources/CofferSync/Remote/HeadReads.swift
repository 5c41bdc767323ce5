import Foundation

/// The head objects one pull reads, each fetched once: the checkpoints it applies need the heads of
/// the devices their cuts name, and then the pull of each device needs its head again.
final class HeadReads {
    private let client: S3Client
    private let layout: RemoteLayout
    private var read: [UUID: [UInt8]?] = [:]

    init(client: S3Client, layout: RemoteLayout) {
        self.client = client
        self.layout = layout
    }

    /// `device`'s head object as the store held it at this pull's first read of it (`nil`: none).
    func bytes(of device: UUID) throws(CofferError) -> [UInt8]? {
        if let cached = read[device] { return cached }
        let bytes = try client.get(layout.headKey(device))
        read[device] = .some(bytes)
        return bytes
    }
}
