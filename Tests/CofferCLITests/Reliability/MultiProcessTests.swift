import CofferTestSupport
import Foundation
import Testing

/// Several processes writing one vault at once (issue 8): LMDB's writer lock serialises their
/// transactions, and nothing any of them acknowledged is lost or damaged.
@Suite("Processes: several coffer processes writing one vault at once lose nothing")
struct MultiProcessTests {
    @Test("two item writers, a blob writer and a backup run side by side; then every write is there and verify passes")
    func concurrentWriters() throws {
        let cli = try CLIHarness()
        let blobFile = cli.directory.path("big.bin")
        let blob = Data(SplitMix64.bytes(24 << 20, seed: 41))
        try blob.write(to: blobFile)
        let tree = cli.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        for index in 0..<40 {
            try Data(SplitMix64.bytes(50_000, seed: UInt64(index))).write(
                to: tree.appendingPathComponent("file-\(index)")
            )
        }
        let itemsPerWriter = 15
        let failures = Failures()
        @Sendable func run(_ arguments: [String]) {
            do {
                let result = try cli.run(arguments)
                if result.status != 0 { failures.record("coffer \(arguments.joined(separator: " ")): \(result.error)") }
            } catch {
                failures.record("coffer \(arguments.joined(separator: " ")): \(error)")
            }
        }
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            switch worker {
            case 0, 1:
                for index in 0..<itemsPerWriter {
                    run([
                        "item", "add", "--service", "writer-\(worker)", "--account", "a\(index)", "--value",
                        "v\(index)",
                    ])
                }
            case 2: run(["put", "big", blobFile.path])
            default: run(["backup", tree.path, "--name", "tree"])
            }
        }
        #expect(failures.all.isEmpty, "\(failures.all)")

        for worker in 0..<2 {
            let found = try cli.json(["item", "find", "--service", "writer-\(worker)"]) as? [[String: Any]] ?? []
            #expect(found.count == itemsPerWriter, "writer \(worker): \(found.count) items of \(itemsPerWriter)")
            let value = try cli.run(["item", "get", "--service", "writer-\(worker)", "--account", "a7"])
            #expect(value.output == "v7")
        }
        let copy = cli.directory.path("big.copy")
        let read = try cli.run(["get", "big", copy.path])
        #expect(read.status == 0, "\(read.error)")
        #expect(try Data(contentsOf: copy) == blob)
        let restored = cli.directory.path("restored")
        let restore = try cli.run(["restore", "tree", restored.path])
        #expect(restore.status == 0, "\(restore.error)")
        #expect(TemporaryDirectory.listing(restored).count == 40)
        let verify = try cli.run(["verify", "--read-data"])
        #expect(verify.status == 0, "\(verify.output)\(verify.error)")
    }
}
