import Coffer
import CofferCLI
import Foundation

/// The fuzz targets: the library's decoders (``FuzzEntryPoints``) and the CLI's argument parser.
enum FuzzTargets {
    static func run(_ target: String, _ bytes: [UInt8]) {
        if target == "cli" {
            parseArguments(bytes)
        } else if let entry = FuzzEntryPoints.targets[target] {
            entry(bytes)
        } else {
            FileHandle.standardError.write(Data("coffer-fuzz: unknown target '\(target)'; use \(names)\n".utf8))
            exit(64)
        }
    }

    static var names: String { (FuzzEntryPoints.targets.keys.sorted() + ["cli"]).joined(separator: ", ") }

    static let console = Console(inputIsTerminal: false, errorIsTerminal: false, output: { _ in }, error: { _ in })
    static let parser = CommandLineParser(root: CofferCommand.root, globalOptions: CofferCommand.globalOptions)

    /// The input as a command line: arguments separated by NUL bytes (invalid UTF-8 repaired, as the
    /// process's arguments would be), parsed, never run.
    static func parseArguments(_ bytes: [UInt8]) {
        let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        _ = try? parser.parse(arguments, environment: ["HOME": "/nonexistent"], console: console)
    }
}

#if FUZZING
/// The target this process fuzzes: `COFFER_FUZZ_TARGET`.
let fuzzTarget = ProcessInfo.processInfo.environment["COFFER_FUZZ_TARGET"] ?? "bundle"

/// libFuzzer's entry point.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzTargets.run(fuzzTarget, data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}
#else
/// Without libFuzzer: `coffer-fuzz TARGET PATH...` runs each file (or each file in each directory)
/// through TARGET once, so the seed corpora are replayed by the test suite in ordinary builds.
@main
struct Replay {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--write-seeds", arguments.count == 2 {
            writeSeeds(to: arguments[1])
            return
        }
        guard let target = arguments.first else {
            FileHandle.standardError.write(
                Data("usage: coffer-fuzz TARGET PATH... (targets: \(FuzzTargets.names))\n".utf8)
            )
            exit(64)
        }
        var count = 0
        for path in arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            let files =
                isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                FuzzTargets.run(target, [UInt8](data))
                count += 1
            }
        }
        print("coffer-fuzz: \(target): \(count) inputs replayed, no crash")
    }

    /// Writes the seeds of every target to `directory/TARGET/seed-N`.
    static func writeSeeds(to directory: String) {
        do {
            var seeds = try FuzzEntryPoints.seeds()
            seeds["cli"] = [
                "item\0add\0--service\0mail\0--account\0ann\0--value\0x",
                "push\0s3://bucket/prefix\0--endpoint\0http://h:1",
                "backup\0/tmp\0--name\0n\0--json", "--vault\0/v\0get\0name\0out\0--quiet", "help\0export",
            ].map { Array($0.utf8) }
            for (target, inputs) in seeds {
                let folder = URL(fileURLWithPath: directory).appendingPathComponent(target)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                for (index, input) in inputs.enumerated() {
                    try Data(input).write(to: folder.appendingPathComponent("seed-\(index)"))
                }
            }
        } catch {
            FileHandle.standardError.write(Data("coffer-fuzz: writing seeds failed: \(error)\n".utf8))
            exit(1)
        }
    }
}
#endif
