import CofferTestSupport
import Foundation
import Testing

/// `coffer verify --read-data-subset` through the built binary.
@Suite("verify --read-data-subset end to end")
struct VerifySubsetEndToEndTests {
    @Test("slices add up to every chunk, a share is accepted, and bad subsets or both flags are usage errors")
    func subsets() throws {
        let cli = try CLIHarness()
        let file = cli.directory.path("data.bin")
        try Data(RandomBytes.data(count: 3 << 20)).write(to: file)
        #expect(try cli.run(["put", "data", file.path]).status == 0)
        let all = try #require(try cli.json(["verify", "--read-data"]) as? [String: Any])
        var total = 0
        for index in 1...3 {
            let result = try cli.run(["verify", "--read-data-subset", "\(index)/3"])
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("subset \(index)/3:"), "\(result.output)")
            let json = try #require(try cli.json(["verify", "--read-data-subset", "\(index)/3"]) as? [String: Any])
            total += json["chunksRead"] as? Int ?? 0
        }
        #expect(total == all["chunks"] as? Int)
        #expect(try cli.run(["verify", "--read-data-subset", "25%"]).status == 0)
        let bad = try cli.run(["verify", "--read-data-subset", "4/3"])
        #expect(bad.status == 64 && bad.error.contains("--read-data-subset takes N/M"), "\(bad.error)")
        let both = try cli.run(["verify", "--read-data", "--read-data-subset", "1/3"])
        #expect(both.status == 64 && both.error.contains("not both"), "\(both.error)")
    }
}
