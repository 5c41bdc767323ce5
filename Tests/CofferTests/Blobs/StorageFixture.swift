import CofferTestSupport
import Foundation

@testable import Coffer

/// A bare environment with every vault table, for tests of the storage-level pieces of the blob tier.
struct StorageFixture {
    let directory: TemporaryDirectory
    let environment: Environment
    let schema: Schema

    init() throws {
        directory = try TemporaryDirectory()
        environment = try Environment(directory: directory.url, options: .init(createIfMissing: true))
        schema = try Schema(environment: environment, create: true)
    }
}
