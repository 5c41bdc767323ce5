package import Foundation
internal import Glibc

/// What one snapshot backs up: a directory, or several paths (directories or files) under their
/// deepest common directory, which becomes the snapshot's tree root; only what lies under the paths,
/// and the directories on the way to them, is walked (restic's `backup PATH…`).
package struct BackupSources: Sendable, Equatable {
    /// The tree's root: the one directory, or the paths' deepest common directory.
    package let root: String
    /// The paths under the root to walk, relative to it; `nil` to walk all of it.
    package let targets: [[UInt8]]?
    /// The paths as given, absolute and sorted, nested ones folded into the ones holding them.
    package let paths: [String]

    /// The sources `urls` name.
    ///
    /// - Throws: ``CofferError`` `.param` for no path, a path that does not exist, or a single path
    ///   that is not a directory.
    package init(_ urls: [URL]) throws(CofferError) {
        var absolute = Array(Set(urls.map { Self.normalized($0.standardizedFileURL.path) })).sorted()
        guard !absolute.isEmpty else { throw CofferError(.param, "give at least one path to back up") }
        // A path inside another is backed up with it.
        absolute = absolute.filter { path in !absolute.contains { $0 != path && Self.isInside(path, $0) } }
        for path in absolute where !Self.exists(path) {
            throw CofferError(.param, "\(path) does not exist; give the paths to back up (check them)")
        }
        paths = absolute
        if absolute.count == 1, Self.isDirectory(absolute[0]) {
            root = absolute[0]
            targets = nil
            return
        }
        let split = absolute.map { $0.split(separator: "/").map(String.init) }
        var common = split[0]
        for components in split.dropFirst() {
            common = Array(zip(common, components).prefix { $0.0 == $0.1 }.map(\.0))
        }
        // A single file, or a common prefix naming one of the files: its directory is the root.
        if absolute.contains("/" + common.joined(separator: "/")),
            !Self.isDirectory("/" + common.joined(separator: "/"))
        {
            common.removeLast()
        }
        root = "/" + common.joined(separator: "/")
        targets = split.map { Array($0.dropFirst(common.count).joined(separator: "/").utf8) }
    }

    /// The name a snapshot of these sources has unless given: the directory's path, or the paths
    /// joined by commas.
    package var defaultName: String { paths.joined(separator: ",") }

    private static func normalized(_ path: String) -> String {
        path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }

    private static func isInside(_ path: String, _ directory: String) -> Bool {
        directory == "/" ? path != "/" : path.hasPrefix(directory + "/")
    }

    private static func exists(_ path: String) -> Bool {
        if case .success = WalkedPath.status(of: path) { return true }
        return false
    }

    private static func isDirectory(_ path: String) -> Bool {
        guard case .success(let status) = WalkedPath.status(of: path) else { return false }
        return status.st_mode & S_IFMT == S_IFDIR
    }
}
