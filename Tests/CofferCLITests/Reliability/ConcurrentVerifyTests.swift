import CofferTestSupport
import Foundation
import Synchronization
import Testing

/// `verify` beside writers (issue 38, finding 6): it once read the snapshots' references in their own
/// transactions and the blobs' and chunks' in another, so a backup or forget committing in between
/// made a healthy vault report "a chunk's reference count is 6 but 5 references exist". Every
/// structural check now reads one snapshot of the vault.
@Suite("verify beside a writer: one consistent snapshot, no false damage")
struct ConcurrentVerifyTests {
    @Test("verify and verify --read-data while backups, forgets and puts of shared content commit")
    func verifyBesideWriters() throws {
        let cli = try CLIHarness()
        let tree = cli.directory.path("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        // Incompressible and shared: every backup and put references the same chunks again.
        let content = Data(SplitMix64.bytes(600_000, seed: 38))
        try content.write(to: tree.appendingPathComponent("shared.bin"))
        try content.write(to: cli.directory.path("shared.bin"))
        #expect(try cli.run(["backup", tree.path]).status == 0)

        let stop = Atomic<Bool>(false)
        let writes = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let writer = Thread {
            var round = 0
            while !stop.load(ordering: .relaxed) {
                round += 1
                let steps: [[String]] = [
                    ["backup", tree.path],
                    ["put", "copy\(round % 3)", cli.directory.path("shared.bin").path],
                    ["forget", "--keep-last", "2"],
                ]
                for step in steps {
                    guard let result = try? cli.run(step) else { continue }
                    if result.status == 0 {
                        writes.add(1, ordering: .relaxed)
                    } else {
                        failures.withLock { $0.append("\(step): \(result.error)") }
                    }
                }
            }
        }
        writer.start()
        defer { stop.store(true, ordering: .relaxed) }
        for round in 0..<16 {
            let arguments = round % 4 == 3 ? ["verify", "--read-data"] : ["verify"]
            let result = try cli.run(arguments)
            #expect(result.status == 0, "round \(round): \(result.output) \(result.error)")
        }
        stop.store(true, ordering: .relaxed)
        while !writer.isFinished { Thread.sleep(forTimeInterval: 0.05) }
        #expect(writes.load(ordering: .relaxed) >= 3, "the writer committed too little to test anything")
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(try cli.run(["verify", "--read-data"]).status == 0)
    }
}
