import CofferTestSupport
import Foundation
import Testing

/// The committed fuzz corpora (seeds, and anything a campaign found worth keeping) replayed through
/// the fuzz target's ordinary build on every test run, so a decoder change that crashes on them fails
/// here before anyone fuzzes.
@Suite("Fuzz corpora replay without a crash")
struct FuzzCorpusTests {
    @Test(
        "coffer-fuzz replays Tests/Fuzz/corpus for each target",
        arguments: ["bundle", "frames", "records", "rncryptor", "cli"]
    )
    func replay(target: String) throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/\(target)")
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus.path)
        #expect(!files.isEmpty)
        let result = try Products.run(try Products.executable("coffer-fuzz"), [target, corpus.path])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("\(files.count) inputs replayed, no crash"))
    }
}
