// swift-tools-version:6.2
//
// Coffer: an encrypted, sync-capable storage engine on LMDB.
// The C libraries come from Debian's packages (see Tools/install-deps); nothing is fetched.

import PackageDescription

/// Settings every Swift target shares: Swift 6 language mode and warnings as errors.
let strictSettings: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The library's floors, bottom up, each depending only on the floors below it (docs/ARCHITECTURE.md,
/// "Floors"). With `COFFER_FLOORS=targets` each floor is its own target, so that a reference upward
/// does not compile: `Tools/test` builds that way to check the rule. Otherwise the same folders build
/// as one module, `Coffer`: Swift serialises the bodies of public inlinable code only, and the floors
/// share `package` code, so across targets every generic call from one floor into another (a record
/// reader, a transaction, a lock) runs unspecialised, and keychain reads fell to a quarter of their
/// speed (coffer-bench, side by side; `-enable-cmo-everything`, which would serialise them, breaks
/// the link with duplicate specialisations).
let floorsAsTargets = Context.environment["COFFER_FLOORS"] == "targets"

/// With `COFFER_OPTIMIZED=1` (Tools/test), the debug build compiles the library, the mounted view
/// and the benchmarks optimized, the CLI and the tests still not, with `@testable` imports as before:
/// the tests that spend their time in the library's own code (membership logs, chunking, the models)
/// take a fraction of the CPU (swift test 430 s instead of 531 on two cores), and the one build
/// serves the end-to-end tests too, which before ran a release build that took as long again to
/// compile. `COFFER_OPTIMIZED` is defined there, so `coffer-bench` knows it may report figures.
let optimizedBuild = Context.environment["COFFER_OPTIMIZED"] == "1"
let optimizedSettings: [SwiftSetting] = optimizedBuild ? [.unsafeFlags(["-O"]), .define("COFFER_OPTIMIZED")] : []
let floorFolders = [
    "CofferCore", "CofferStore", "CofferContent", "CofferKeychain", "CofferBlobs", "CofferSnapshots", "CofferSync",
    "Coffer",
]

let libraryTargets: [Target] =
    floorsAsTargets
    ? [
        // The floors every tier stands on: basics (errors, formats, the model's shared types, byte
        // streams, POSIX, concurrency) and engines (LMDB, OpenSSL, zstd, FastCDC). Nothing here may
        // name a tier: the compiler refuses an upward reference. Its public types are part of Coffer's
        // API, re-exported by `import Coffer`.
        .target(
            name: "CofferCore",
            dependencies: ["CLMDB", "CZstd", "COpenSSL", "CLinux"],
            path: "Sources/CofferCore",
            swiftSettings: strictSettings + [.define("COFFER_FLOOR_TARGETS")]
        ),

        // The vault under the tiers: its identity, keys and meta records, creating, opening, locking,
        // and the journal (change log, record versions) every tier writes and sync reads.
        .target(
            name: "CofferStore",
            dependencies: ["CofferCore"],
            path: "Sources/CofferStore",
            swiftSettings: strictSettings + [.define("COFFER_FLOOR_TARGETS")]
        ),

        // The content engine blobs and snapshots share: chunks, their records and keys, chunk lists,
        // writes in progress, the parallel write pipeline and the content reader.
        .target(
            name: "CofferContent",
            dependencies: ["CofferStore"],
            path: "Sources/CofferContent",
            swiftSettings: strictSettings + [.define("COFFER_FLOOR_TARGETS")]
        ),

        // The tiers, each on the vault and the content engine, none on another tier.
        .target(
            name: "CofferKeychain",
            dependencies: ["CofferStore"],
            path: "Sources/CofferKeychain",
            swiftSettings: strictSettings + [.define("COFFER_FLOOR_TARGETS")]
        ),
        .target(
            name: "CofferBlobs",
            dependencies: ["CofferContent"],
            path: "Sources/CofferBlobs",
            swiftSettings: strictSettings + [.define("COFFER_FLOOR_TARGETS")]
        ),
        .target(
            name: "CofferSnapshots",
            dependencies: ["CofferContent"],
            path: "Sources/CofferSnapshots",
            swiftSettings: strictSettings + [.define("COFFER_FLOOR_TARGETS")]
        ),

        // Sync between the vaults of a group, by bundle files and through S3: above the tiers, whose
        // records it moves.
        .target(
            name: "CofferSync",
            dependencies: ["CofferKeychain", "CofferBlobs", "CofferSnapshots"],
            path: "Sources/CofferSync",
            swiftSettings: strictSettings + [.define("COFFER_FLOOR_TARGETS")]
        ),

        // The library: the public API plus `package` building blocks for the CLI and the benchmarks.
        // Maintenance (gc, verify, statistics over every tier), RNCryptor interop and the fuzzing
        // entry points sit here, above everything they use.
        .target(
            name: "Coffer",
            dependencies: ["CofferSync"],
            path: "Sources/Coffer",
            swiftSettings: strictSettings + [.define("COFFER_FLOOR_TARGETS")]
        ),
    ]
    : [
        // The library: the public API plus `package` building blocks for the CLI and the benchmarks.
        .target(
            name: "Coffer",
            dependencies: ["CLMDB", "CZstd", "COpenSSL", "CLinux"],
            path: "Sources",
            // Tools/docs converts the DocC catalog itself, with the symbol graphs the build emits.
            exclude: ["Coffer/Coffer.docc", "CofferMount"],
            sources: floorFolders,
            swiftSettings: strictSettings + optimizedSettings
        )
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
        // libfuse 3, for `coffer mount` only: the library does not link it.
        .systemLibrary(
            name: "CFuse3",
            path: "Sources/CFuse3",
            pkgConfig: "fuse3",
            providers: [.apt(["libfuse3-dev"])]
        ),

        // The library (see `libraryTargets` above).
    ]
        + libraryTargets
        + [
            // The mounted view (`coffer mount`): a read-only file system of the vault's snapshots and
            // blobs, and its FUSE binding. Beside the library, not in it: apps do not link libfuse.
            .target(
                name: "CofferMount",
                dependencies: ["Coffer", "CFuse3"],
                path: "Sources/CofferMount",
                swiftSettings: strictSettings + optimizedSettings
            ),

            // The command-line tool: a library with the commands (so tests and fuzzers can drive the
            // parser) and a thin executable.
            .target(
                name: "CofferCLI",
                dependencies: ["Coffer", "CofferMount"],
                path: "Tools/CofferCLI",
                swiftSettings: strictSettings
            ),
            .executableTarget(
                name: "coffer",
                dependencies: ["Coffer", "CofferCLI"],
                path: "Tools/coffer",
                swiftSettings: strictSettings
            ),

            // Writes the command reference and the man pages from the CLI's command definitions
            // (Tools/reference), or checks them (Tools/test).
            .executableTarget(
                name: "coffer-reference",
                dependencies: ["CofferCLI"],
                path: "Tools/coffer-reference",
                swiftSettings: strictSettings
            ),

            // The worked example of embedding Coffer: a photo vault (docs/EMBEDDING.md, "Example app").
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
                swiftSettings: strictSettings + optimizedSettings
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
                dependencies: ["Coffer"],
                path: "Tests/CofferTestSupport",
                swiftSettings: strictSettings
            ),
            .testTarget(
                name: "CofferTests",
                dependencies: ["Coffer", "CofferMount", "CofferTestSupport"],
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
                dependencies: ["CofferCLI", "Coffer", "CofferMount", "CofferTestSupport"],
                path: "Tests/CofferCLITests",
                // The harness tests run the build's own coffer-bench when it is optimized.
                swiftSettings: strictSettings + (optimizedBuild ? [.define("COFFER_OPTIMIZED")] : [])
            ),
        ],
    swiftLanguageModes: [.v6]
)
