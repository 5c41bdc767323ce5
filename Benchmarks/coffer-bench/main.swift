// coffer-bench: measures Coffer's building blocks, each figure beside a reference measured in the
// same run. Build and run in release: `swift run -c release coffer-bench [--quick] [--filter TEXT]`.
import Foundation

let usage = """
    USAGE: coffer-bench [--quick] [--runs N] [--filter TEXT] [--corpus DIR] [--json FILE]

      --quick        fewer repetitions (a few seconds)
      --runs N       measured runs per figure after one warm-up (default 5; --quick 3)
      --filter TEXT  only figures whose name contains TEXT
      --corpus DIR   measure the blob tier on the files under DIR (default: a generated mixed corpus)
      --json FILE    also write the results as JSON
    """

var quick = false
var runs: Int?
var filter: String?
var jsonPath: String?
var corpus: String?
var arguments = Array(CommandLine.arguments.dropFirst())[...]
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick": quick = true
    case "--runs": runs = arguments.popFirst().flatMap(Int.init)
    case "--filter": filter = arguments.popFirst()
    case "--json": jsonPath = arguments.popFirst()
    case "--corpus": corpus = arguments.popFirst()
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        FileHandle.standardError.write(Data("coffer-bench: error: unknown argument '\(argument)'\n\(usage)\n".utf8))
        exit(64)
    }
}
if let runs, runs < 1 {
    FileHandle.standardError.write(Data("coffer-bench: error: --runs needs a whole number of at least 1\n".utf8))
    exit(64)
}

#if DEBUG
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
runBenchmarks(quick: quick, runs: runs, filter: filter, corpus: corpus, jsonPath: jsonPath)
#endif
