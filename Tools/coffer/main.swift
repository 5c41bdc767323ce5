import Coffer
import CofferCLI
import Foundation

// The library's messages name `coffer` commands here, not library calls.
MessageAudience.choose(.commandLine)

// Secrets pass through this process's memory: no core dump or crash report may carry them out.
do {
    // First, while this is the only thread: every thread started later inherits the signal mask.
    try Interruption.install()
    try ProcessHardening.disableCoreDumps()
    ProcessHardening.disableCrashBacktraces()
} catch {
    FileHandle.standardError.write(Data("coffer: error: \(error.message)\n".utf8))
    exit(CofferCommand.failure)
}

/// The arguments as the kernel passed them: bytes, so ones that are not UTF-8 can be refused by name.
let rawArguments = (1..<Int(CommandLine.argc)).map { index -> [UInt8] in
    guard let pointer = CommandLine.unsafeArgv[index] else { return [] }
    return Array(
        UnsafeBufferPointer(
            start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self),
            count: strlen(pointer)
        )
    )
}
let status = CofferCommand.main(
    rawArguments: rawArguments,
    environment: ProcessInfo.processInfo.environment,
    console: .standard()
)
exit(status)
