import CofferTestSupport
import Foundation
import Testing

/// `init --name` and `init --join … --name` name the device in its group's log: `devices` lists the
/// name, and `device revoke NAME` finds it.
@Suite("init --name, end to end")
struct DeviceNameEndToEndTests {
    let cli: CLIHarness

    init() throws { cli = try CLIHarness() }

    func vault(_ name: String) -> [String: String] { ["COFFER_VAULT": cli.directory.path(name).path] }

    func devices(_ name: String) throws -> [[String: Any]] {
        let result = try cli.run(["devices", "--json"], extra: vault(name))
        #expect(result.status == 0, "\(result.error)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
    }

    @Test("a founding and a joining device go by their --name; device revoke NAME finds the joined one")
    func namedDevices() throws {
        #expect(try cli.run(["init", "--name", "ann-laptop"], extra: vault("a")).status == 0)
        #expect(try devices("a").map { $0["name"] as? String } == ["ann-laptop"])
        let bundle = cli.directory.path("a.bundle").path
        #expect(try cli.run(["export", "--out", bundle], extra: vault("a")).status == 0)
        let joined = try cli.run(["init", "--join", bundle, "--name", "ann-phone"], extra: vault("b"))
        #expect(joined.status == 0, "\(joined.error)")
        let back = cli.directory.path("b.bundle").path
        #expect(try cli.run(["export", "--out", back], extra: vault("b")).status == 0)
        #expect(try cli.run(["import", back], extra: vault("a")).status == 0)
        let names = try devices("a").compactMap { $0["name"] as? String }
        #expect(names.sorted() == ["ann-laptop", "ann-phone"], "\(names)")
        #expect(try cli.run(["devices"], extra: vault("a")).output.contains("ann-phone"))

        let revoked = try cli.run(["device", "revoke", "ann-phone"], extra: vault("a"))
        #expect(revoked.status == 0, "\(revoked.error)")
        let phone = try devices("a").first { $0["name"] as? String == "ann-phone" }
        #expect(phone?["isActive"] as? Bool == false, "\(String(describing: phone))")
    }

    @Test("a name with a line break is refused before anything is made")
    func badName() throws {
        let refused = try cli.run(["init", "--name", "two\nlines"], extra: vault("c"))
        #expect(refused.status == 1)
        #expect(refused.error.contains("name"), "\(refused.error)")
        #expect(!FileManager.default.fileExists(atPath: cli.directory.path("c").path))
    }
}
