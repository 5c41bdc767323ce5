import CofferTestSupport
import Foundation
import Testing

/// A seeded subset of `Tools/damage-matrix` (issue 38): damaged vault files (a rolled-back and an
/// altered meta page, a flipped bit in a leaf's offsets and a branch's header, a leaf swapped with an
/// overflow page, a file cut short, a FIFO in place of data.mdb) x verify, get, item add, repair and
/// export. Every run ends with a correct result or an error: no signal, no hang, no silent wrong result.
@Suite("Damage matrix, seeded subset: no signals, no hangs, no silent wrong results")
struct DamageMatrixTests {
    @Test("Tools/damage-matrix --quick")
    func quickMatrix() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let report = try TemporaryDirectory()
        let json = report.path("matrix.json")
        let result = try Products.run(
            root.appendingPathComponent("Tools/damage-matrix"),
            [
                "--quick", "--seed", "38", "--timeout", "20", "--coffer", try Products.executable("coffer").path,
                "--json", json.path,
            ]
        )
        #expect(result.status == 0, "\(result.output) \(result.error)")
        let parsed = try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [String: Any]
        let counts = parsed?["counts"] as? [String: Int] ?? [:]
        #expect(counts.values.reduce(0, +) == 35, "\(counts)")
        for outcome in ["signal", "hang", "silent wrong"] {
            #expect(counts[outcome, default: 0] == 0, "\(outcome): \(result.output)")
        }
    }
}
