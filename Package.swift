// swift-tools-version:6.2
//
// Coffer: an encrypted, sync-capable storage engine on LMDB.
// The three C libraries come from Debian's packages (see Tools/install-deps); nothing is fetched.

import PackageDescription

/// Settings every Swift target shares: Swift 6 language mode and warnings as errors.
let strictSettings: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Coffer",
    products: [
        .library(name: "Coffer", targets: ["Coffer"]),
        .executable(name: "coffer", targets: ["coffer"]),
        .executable(name: "coffer-bench", targets: ["coffer-bench"]),
    ],
    targets: [
        // C libraries, one systemLibrary target each: a module map and a shim.h in the module's folder.
        .systemLibrary(
            name: "CLMDB",
            path: "Sources/CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .systemLibrary(
            name: "CZstd",
            path: "Sources/CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            path: "Sources/COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // Linux calls Swift cannot make itself (prctl is variadic): inline wrappers, nothing to link.
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),

        // The floors every tier stands on: basics (errors, formats, the model's shared types, byte
        // streams, POSIX, concurrency) and engines (LMDB, OpenSSL, zstd, FastCDC). Nothing here may
        // name a tier: the compiler refuses an upward reference. Its public types are part of Coffer's
        // API, re-exported by `import Coffer`.
        .target(
            name: "CofferCore",
            dependencies: ["CLMDB", "CZstd", "COpenSSL", "CLinux"],
            path: "Sources/CofferCore",
            swiftSettings: strictSettings
        ),

        // The vault under the tiers: its identity, keys and meta records, creating, opening, locking,
        // and the journal (change log, record versions) every tier writes and sync reads.
        .target(
            name: "CofferStore",
            dependencies: ["CofferCore"],
            path: "Sources/CofferStore",
            swiftSettings: strictSettings
        ),

        // The content engine blobs and snapshots share: chunks, their records and keys, chunk lists,
        // writes in progress, the parallel write pipeline and the content reader.
        .target(
            name: "CofferContent",
            dependencies: ["CofferStore"],
            path: "Sources/CofferContent",
            swiftSettings: strictSettings
        ),

        // The tiers, each on the vault and the content engine, none on another tier.
        .target(
            name: "CofferKeychain",
            dependencies: ["CofferStore"],
            path: "Sources/CofferKeychain",
            swiftSettings: strictSettings
        ),
        .target(
            name: "CofferBlobs",
            dependencies: ["CofferContent"],
            path: "Sources/CofferBlobs",
            swiftSettings: strictSettings
        ),
        .target(
            name: "CofferSnapshots",
            dependencies: ["CofferContent"],
            path: "Sources/CofferSnapshots",
            swiftSettings: strictSettings
        ),

        // Sync between the vaults of a group, by bundle files and through S3: above the tiers, whose
        // records it moves.
        .target(
            name: "CofferSync",
            dependencies: ["CofferKeychain", "CofferBlobs", "CofferSnapshots"],
            path: "Sources/CofferSync",
            swiftSettings: strictSettings
        ),

        // The library: the public API plus `package` building blocks for the CLI and the benchmarks.
        // Maintenance (gc, verify, statistics over every tier), RNCryptor interop and the fuzzing
        // entry points sit here, above everything they use.
        .target(
            name: "Coffer",
            dependencies: ["CofferSync"],
            path: "Sources/Coffer",
            swiftSettings: strictSettings
        ),

        // The command-line tool: a library with the commands (so tests and fuzzers can drive the
        // parser) and a thin executable.
        .target(
            name: "CofferCLI",
            dependencies: ["Coffer"],
            path: "Tools/CofferCLI",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "coffer",
            dependencies: ["Coffer", "CofferCLI"],
            path: "Tools/coffer",
            swiftSettings: strictSettings
        ),

        // The worked example of embedding Coffer: a photo vault (README, "Example app").
        .executableTarget(
            name: "secure-photos",
            dependencies: ["Coffer"],
            path: "Examples/SecurePhotos",
            swiftSettings: strictSettings
        ),

        // The benchmark harness.
        .executableTarget(
            name: "coffer-bench",
            dependencies: ["Coffer"],
            path: "Benchmarks/coffer-bench",
            swiftSettings: strictSettings
        ),

        // The fuzz target: libFuzzer's entry point when built with -DFUZZING and --sanitize=fuzzer
        // (Tools/fuzz), a replayer of the seed corpora otherwise (the tests run it).
        .executableTarget(
            name: "coffer-fuzz",
            dependencies: ["Coffer", "CofferCLI"],
            path: "Tests/Fuzz/coffer-fuzz",
            swiftSettings: strictSettings + [.unsafeFlags(["-parse-as-library"])]
        ),

        // A test fixture process: plays a crashed foreign process (e.g. one that died holding an LMDB
        // read slot), which a test cannot do inside its own process.
        .executableTarget(
            name: "coffer-test-fixture",
            dependencies: ["CLMDB"],
            path: "Tests/Fixtures/coffer-test-fixture",
            swiftSettings: strictSettings
        ),

        // Fixtures both test targets share: temporary directories, built products, child processes.
        .target(
            name: "CofferTestSupport",
            path: "Tests/CofferTestSupport",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferTests",
            dependencies: ["Coffer", "CofferTestSupport"],
            path: "Tests/CofferTests",
            resources: [.copy("Vectors")],
            swiftSettings: strictSettings
        ),
        // Coffer as an app sees it: `import Coffer` only, no @testable, no test support.
        .testTarget(
            name: "CofferAPITests",
            dependencies: ["Coffer"],
            path: "Tests/CofferAPITests",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CofferCLITests",
            dependencies: ["CofferCLI", "Coffer", "CofferTestSupport"],
            path: "Tests/CofferCLITests",
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
