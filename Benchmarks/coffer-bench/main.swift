// coffer-bench: measures Coffer's building blocks, each figure beside a reference measured in the
// same run. Build and run in release: `swift run -c release coffer-bench [--quick] [--filter TEXT]`.
import Foundation

let usage = """
    USAGE: coffer-bench [--quick] [--runs N] [--filter TEXT] [--corpus DIR] [--tree DIR] [--json FILE]
                        [--markdown FILE] [--svg FILE]

      --quick           fewer repetitions and smaller data (under a minute); no peers
      --runs N          measured runs per figure after one warm-up (default 5; --quick 3)
      --filter TEXT     only figures whose name contains TEXT (and their references); may be repeated
      --corpus DIR      measure blobs, snapshots and sync on the files under DIR (default: generated)
      --tree DIR        back up and restore DIR as the snapshots' real tree (default: one assembled from
                        the toolchain's libraries, /usr/share/doc and /usr/include)
      --json FILE       also write the results as JSON (schema in docs/PERFORMANCE.md)
      --markdown FILE   also write the table as Markdown, with the date, command and machine
      --svg FILE        also draw each figure beside its reference as an SVG bar chart
      --cores LIST      instead: the backup, put and get figures with their references, pinned to each
                        core count in LIST (1,2 or 1-4) with taskset, then the speed-up curve and the
                        serial fraction it implies (Amdahl) with the speed-up it predicts at 4, 8 and 16
                        cores (--json FILE writes them; --quick, --runs, --corpus, --tree apply)
      --passes N        --cores: measure every count N times, alternating their order (default 3)
      --profile-stages  instead: back up the real tree (--tree DIR, or the assembled one) --runs times,
                        sampling every thread's CPU, run-queue and blocked time by pipeline stage, and
                        report the serial fraction they imply (--json FILE writes the median run)
      --space           instead: back up the real tree and 2,000 small text files, each into a fresh
                        vault beside a fresh restic repository, and split the vault's bytes into chunk
                        payload, LMDB page rounding, tree nodes, indexes and free pages
      --scale           instead: grow a vault from 10,000 to --scale-items items beside --scale-blob-mib
                        of blobs, reporting get, find, put and export costs and peak memory at each
                        power of ten (--json FILE writes them)
      --scale-items N   default 1,000,000
      --scale-blob-mib M  default 8192 (8 GiB)
      --scale-batch N   items per transaction while growing the vault (default 20,000)
    """

var quick = false
var runs: Int?
var filters: [String] = []
var cores: [Int]?
var passes = 3
var profileStages = false
var space = false
var outputs = Outputs()
var scale = false
var scaleItems = 1_000_000
var scaleBlobMiB = 8192
var scaleBatch = 20_000
var corpus: String?
var tree: String?
var arguments = Array(CommandLine.arguments.dropFirst())[...]

/// Stops with the usage text and exit status 64 (`EX_USAGE`).
func usageError(_ message: String) -> Never {
    FileHandle.standardError.write(Data("coffer-bench: error: \(message)\n\(usage)\n".utf8))
    exit(64)
}

/// The value after `option`, or a usage error naming the option.
@MainActor func value(of option: String) -> String {
    guard let value = arguments.popFirst(), !value.hasPrefix("--") else { usageError("\(option) needs a value") }
    return value
}

while let argument = arguments.popFirst() {
    switch argument {
    case "--quick": quick = true
    case "--runs":
        guard let count = Int(value(of: argument)), count >= 1 else {
            usageError("--runs needs a whole number of at least 1")
        }
        runs = count
    case "--filter": filters.append(value(of: argument))
    case "--cores":
        guard let list = CoresMode.parse(value(of: argument)) else {
            usageError("--cores needs core counts, e.g. 1,2 or 1-4")
        }
        cores = list
    case "--json": outputs.json = value(of: argument)
    case "--markdown": outputs.markdown = value(of: argument)
    case "--svg": outputs.svg = value(of: argument)
    case "--corpus": corpus = value(of: argument)
    case "--tree": tree = value(of: argument)
    case "--scale": scale = true
    case "--passes":
        guard let count = Int(value(of: argument)), count >= 1 else {
            usageError("--passes needs a count of at least 1")
        }
        passes = count
    case "--profile-stages": profileStages = true
    case "--space": space = true
    case "--scale-items":
        guard let count = Int(value(of: argument)), count >= 1 else {
            usageError("--scale-items needs a count of at least 1")
        }
        scaleItems = count
    case "--scale-blob-mib":
        guard let count = Int(value(of: argument)), count >= 0 else {
            usageError("--scale-blob-mib needs a size in MiB")
        }
        scaleBlobMiB = count
    case "--scale-batch":
        guard let count = Int(value(of: argument)), count >= 1 else {
            usageError("--scale-batch needs a count of at least 1")
        }
        scaleBatch = count
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        usageError("unknown argument '\(argument)'")
    }
}

// A peer that exits early must fail its benchmark, not kill the harness with SIGPIPE.
signal(SIGPIPE, SIG_IGN)

// A debug build compiled optimized (COFFER_OPTIMIZED, Tools/test's) runs: its figures are near a
// release build's, and the harness tests run it.
#if DEBUG && !COFFER_OPTIMIZED
FileHandle.standardError.write(
    Data(
        """
        coffer-bench: refusing to report figures from a debug build: they would be meaningless.
        Run: swift run -c release coffer-bench\n
        """.utf8
    )
)
exit(1)
#else
if let cores {
    let childArguments =
        (quick ? ["--quick"] : []) + (runs.map { ["--runs", "\($0)"] } ?? [])
        + (corpus.map { ["--corpus", $0] } ?? []) + (tree.map { ["--tree", $0] } ?? [])
    do {
        try CoresMode.run(cores: cores, passes: passes, childArguments: childArguments, jsonPath: outputs.json)
    } catch {
        FileHandle.standardError.write(Data("coffer-bench: \(error)\n".utf8))
        exit(1)
    }
} else if profileStages || space {
    let real = SnapshotSuite.Tree(
        source: tree.map { .given($0) } ?? .assembled(budget: quick ? 48 << 20 : 256 << 20),
        label: " (real tree)"
    )
    do {
        if profileStages {
            try StageProfile.run(tree: real, runs: runs ?? (quick ? 3 : 5), jsonPath: outputs.json)
        } else {
            try SpaceReport.run(tree: real, jsonPath: outputs.json)
        }
    } catch {
        FileHandle.standardError.write(Data("coffer-bench: \(error)\n".utf8))
        exit(1)
    }
} else if scale {
    do {
        try ScaleMode.run(items: scaleItems, blobMiB: scaleBlobMiB, batch: scaleBatch, jsonPath: outputs.json)
    } catch {
        FileHandle.standardError.write(Data("coffer-bench: \(error)\n".utf8))
        exit(1)
    }
} else {
    runBenchmarks(quick: quick, runs: runs, filters: filters, corpus: corpus, tree: tree, outputs: outputs)
}
#endif
