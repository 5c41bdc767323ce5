// swift-tools-version:6.2
//
// Coffer as an app depends on it: a package of its own that names Coffer by path and uses its one
// library product, `import Coffer` and nothing else. Its tests run every Swift example in the README,
// docs/ and the DocC catalog (Tools/test runs them, with an S3 server for the sync examples), so the
// documentation cannot drift from the API: the examples are taken from the documents at each build.

import PackageDescription

/// Swift 6 and warnings as errors, as in Coffer's own targets.
let appSettings: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "CofferApp",
    dependencies: [.package(name: "Coffer", path: "../..")],
    targets: [
        // Reads the documents' Swift examples and writes each as a function an app could have written.
        .executableTarget(name: "extract-examples", path: "Sources/extract-examples", swiftSettings: appSettings),
        .plugin(
            name: "ExtractDocumentationExamples",
            capability: .buildTool(),
            dependencies: ["extract-examples"],
            path: "Plugins/ExtractDocumentationExamples"
        ),

        // The examples, and the surroundings they take their names from (a vault, a bundle, a second
        // device), made for real and on demand. An example may leave a value it shows unused, and
        // Swift cannot allow that warning alone, so warnings stay warnings here; Coffer's own tests
        // type-check the same examples with every other warning an error (SwiftExampleCompileTests).
        .target(
            name: "DocumentationExamples",
            dependencies: [.product(name: "Coffer", package: "Coffer")],
            path: "Sources/DocumentationExamples",
            plugins: ["ExtractDocumentationExamples"]
        ),
        .testTarget(
            name: "DocumentationExampleTests",
            dependencies: ["DocumentationExamples", .product(name: "Coffer", package: "Coffer")],
            path: "Tests/DocumentationExampleTests",
            swiftSettings: appSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
