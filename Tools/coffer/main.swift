import CofferCLI
import Foundation

let status = CofferCommand.main(
    arguments: Array(CommandLine.arguments.dropFirst()),
    environment: ProcessInfo.processInfo.environment,
    console: .standard()
)
exit(status)
