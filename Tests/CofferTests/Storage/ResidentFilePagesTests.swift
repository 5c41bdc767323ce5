import Foundation
import Testing

@testable import Coffer

@Suite("Resident file pages: the shared field of /proc/self/statm")
struct ResidentFilePagesTests {
    @Test("the third number of a statm line, and nothing from a short or cut line")
    func parsing() {
        #expect(ResidentFilePages.sharedPages(inStatm: Array("1234 567 89 10 0 300 0\n".utf8)) == 89)
        #expect(ResidentFilePages.sharedPages(inStatm: Array("7 6 5\n".utf8)) == 5)
        // The third number must be complete: a read cut inside it says nothing.
        #expect(ResidentFilePages.sharedPages(inStatm: Array("7 6 5".utf8)) == nil)
        #expect(ResidentFilePages.sharedPages(inStatm: Array("7 6".utf8)) == nil)
        #expect(ResidentFilePages.sharedPages(inStatm: Array("".utf8)) == nil)
    }

    @Test("a live reading grows when this process maps and touches a file")
    func live() throws {
        let pages = try #require(ResidentFilePages())
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-statm-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: path) }
        let size = 32 << 20
        try Data(repeating: 1, count: size).write(to: path)
        let descriptor = open(path.path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        // Other tests of this process map and unmap files meanwhile (a closing vault can drop more
        // than 32 MiB of shared pages between two readings), so the reading is taken around a fresh
        // mapping a few times and one clear rise is asked for.
        var rises: [Int] = []
        for _ in 0..<5 {
            let before = try #require(pages.bytes())
            #expect(before > 0)
            let map = try #require(mmap(nil, size, PROT_READ, MAP_SHARED, descriptor, 0))
            defer { munmap(map, size) }
            var sum = 0
            for offset in stride(from: 0, to: size, by: 4096) {
                sum &+= Int(map.load(fromByteOffset: offset, as: UInt8.self))
            }
            #expect(sum == size / 4096)
            let rise = try #require(pages.bytes()) - before
            rises.append(rise)
            if rise > size / 2 { break }
        }
        #expect(rises.contains { $0 > size / 2 }, "mapping 32 MiB raised the reading by only \(rises) bytes")
    }
}
