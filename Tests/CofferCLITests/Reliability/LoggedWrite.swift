import CofferTestSupport
import Foundation

/// One write a reliability test makes through the `coffer` CLI, and how to tell whether the vault
/// holds it: intact, absent, or (never acceptable) something else.
struct LoggedWrite: CustomStringConvertible {
    enum Kind {
        case item(service: String, value: String)
        case blob(name: String, file: URL)
        case snapshot(name: String, tree: URL)
    }

    enum Presence: Equatable {
        case absent
        case intact
        case damaged(String)
    }

    let kind: Kind

    /// The `coffer` arguments that make the write.
    var arguments: [String] {
        switch kind {
        case .item(let service, let value):
            ["item", "add", "--service", service, "--account", "crash", "--value", value, "--sync"]
        case .blob(let name, let file): ["put", name, file.path]
        case .snapshot(let name, let tree): ["backup", tree.path, "--name", name]
        }
    }

    var description: String {
        switch kind {
        case .item(let service, _): "item \(service)"
        case .blob(let name, _): "blob \(name)"
        case .snapshot(let name, _): "snapshot \(name)"
        }
    }

    /// A random write, number `index`: an item (2 in 5), a blob of up to 6 MiB (2 in 5) or a
    /// snapshot of a small tree (1 in 5), its content made under `directory`.
    static func random(_ index: Int, using generator: inout SplitMix64, in directory: URL) throws -> LoggedWrite {
        switch generator.next() % 5 {
        case 0, 1: return item(index, seed: generator.next())
        case 2, 3:
            return try blob(
                index,
                size: Int(generator.next() % UInt64(6 << 20)) + 1,
                seed: generator.next(),
                in: directory
            )
        default: return try snapshot(index, seed: generator.next(), in: directory)
        }
    }

    /// An item add.
    static func item(_ index: Int, seed: UInt64) -> LoggedWrite {
        LoggedWrite(kind: .item(service: "crash-\(index)", value: "value-\(index)-\(seed)"))
    }

    /// A blob put of `size` pseudo-random bytes.
    static func blob(_ index: Int, size: Int, seed: UInt64, in directory: URL) throws -> LoggedWrite {
        let file = directory.appendingPathComponent("blob-\(index).bin")
        try Data(SplitMix64.bytes(size, seed: seed)).write(to: file)
        return LoggedWrite(kind: .blob(name: "blob-\(index)", file: file))
    }

    /// A backup of a tree of three files of up to 2 MiB.
    static func snapshot(_ index: Int, seed: UInt64, in directory: URL) throws -> LoggedWrite {
        var generator = SplitMix64(seed: seed)
        let tree = directory.appendingPathComponent("tree-\(index)")
        try FileManager.default.createDirectory(
            at: tree.appendingPathComponent("sub"),
            withIntermediateDirectories: true
        )
        for (offset, name) in ["a.txt", "sub/b.bin", "sub/c.bin"].enumerated() {
            let size = Int(generator.next() % UInt64(2 << 20)) + offset
            try Data(SplitMix64.bytes(size, seed: generator.next())).write(to: tree.appendingPathComponent(name))
        }
        return LoggedWrite(kind: .snapshot(name: "tree-\(index)", tree: tree))
    }

    /// Whether the vault holds the write, read back through the CLI (`scratch` takes the copies).
    func presence(in cli: CLIHarness, scratch: URL) throws -> Presence {
        let copy = scratch.appendingPathComponent("read-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: copy) }
        let result: Products.Result
        switch kind {
        case .item(let service, let value):
            result = try cli.run(["item", "get", "--service", service, "--account", "crash"])
            if result.status == 0 {
                return result.output == value ? .intact : .damaged("\(self) reads '\(result.output)'")
            }
        case .blob(let name, let file):
            result = try cli.run(["get", name, copy.path])
            if result.status == 0 {
                return try Data(contentsOf: copy) == Data(contentsOf: file) ? .intact : .damaged("\(self) differs")
            }
        case .snapshot(let name, let tree):
            result = try cli.run(["restore", name, copy.path])
            if result.status == 0 {
                return try Self.sameTree(tree, copy) ? .intact : .damaged("\(self) restores a different tree")
            }
        }
        let absent = result.error.contains("itemNotFound") || result.error.contains("there is no")
        return absent ? .absent : .damaged("\(self): \(result.error)")
    }

    /// Whether two directories hold the same relative paths with the same contents.
    static func sameTree(_ a: URL, _ b: URL) throws -> Bool {
        func files(_ root: URL) throws -> [String: Data] {
            var found: [String: Data] = [:]
            let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
            while let url = enumerator?.nextObject() as? URL {
                guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
                found[String(url.path.dropFirst(root.path.count))] = try Data(contentsOf: url)
            }
            return found
        }
        return try files(a) == files(b)
    }
}
