import Foundation

/// The seeds a randomized model test runs: from an environment variable (a count of fresh random
/// seeds, or a comma-separated list to replay failures), else `defaults`.
public enum ModelSeeds {
    /// The seeds `variable` asks for, or `defaults`.
    public static func seeds(_ variable: String, defaults: [UInt64]) -> [UInt64] {
        guard let list = ProcessInfo.processInfo.environment[variable] else { return defaults }
        if list.contains(","), case let seeds = list.split(separator: ",").compactMap({ UInt64($0) }), !seeds.isEmpty {
            return seeds
        }
        if let count = UInt64(list), count > 0 {
            let base = UInt64.random(in: 1...1_000_000)
            return (0..<count).map { base + $0 }
        }
        return defaults
    }
}
