import Coffer
import Foundation

struct OffloadCommand: VaultCommand {
    static let configuration = CommandConfiguration(
        name: "offload",
        abstract: "Keep content in an S3-compatible object store and only a bounded cache of it here.",
        discussion: """
            Pushes, then drops the local copies of chunks the store verifiably holds (in a bundle this vault
            pushed under its own head, or pulled and applied, listed now at the size it had), keeping at most
            --keep of them, most recently used first. Records, manifests, snapshot trees, chunk lists,
            indexes and everything device-bound stay here, and so does content the store does not hold.
            Reads (get, restore, mount, dump, verify --read-data) fetch what is missing from the store,
            check it, and keep it in the cache; every later push and pull keeps the cache within --keep.
            The vault remembers the store; it reads from it with the credentials of the environment. With
            the store out of reach, everything held here stays readable and writable, and reads of
            offloaded content fail naming the store.
            """,
        examples: [
            "coffer offload s3://bucket/group --keep 2G   # keep 2 GiB of content locally",
            "coffer offload s3://bucket/group              # keep no content locally",
        ]
    )

    var target = RemoteTarget()

    @Option(value: "SIZE", help: "The most chunk data to keep locally (default none), like 500M or 2G.")
    var keep: ByteSize?

    func run(_ vault: Vault, _ context: CommandContext) throws {
        let store = try target.store(context)
        let bar = context.progressBar("offload", total: nil)
        let summary = try vault.offloadContent(to: store, keep: UInt64(max(0, keep?.bytes ?? 0)), progress: bar.report)
        bar.finish()
        for notice in summary.notices { context.output.note(notice) }
        try context.output.result(summary) {
            var text =
                "Offloaded \(summary.offloadedChunks) chunk\(summary.offloadedChunks == 1 ? "" : "s") "
                + "(\(ByteCount.format(Int64(summary.offloadedBytes)))) to \(summary.remote); kept "
                + "\(ByteCount.format(Int64(summary.keptBytes))) of content the store holds in the local cache"
            if summary.alreadyOffloaded > 0 {
                text +=
                    "; \(summary.alreadyOffloaded) chunk\(summary.alreadyOffloaded == 1 ? " was" : "s were") offloaded before"
            }
            if summary.structureChunks > 0 {
                text +=
                    "; \(summary.structureChunks) chunk\(summary.structureChunks == 1 ? "" : "s") of chunk lists and snapshot trees "
                    + "(\(ByteCount.format(Int64(summary.structureBytes)))) stay here"
            }
            if summary.localOnlyChunks > 0 {
                text +=
                    "; \(summary.localOnlyChunks) chunk\(summary.localOnlyChunks == 1 ? "" : "s") "
                    + "(\(ByteCount.format(Int64(summary.localOnlyBytes)))) the store does not hold stay here"
            }
            return text + "."
        }
        if summary.offloadedBytes > 0 {
            context.output.note(
                "The data file keeps its size (the space freed is reused by later writes): run coffer compact to give \(ByteCount.format(Int64(summary.offloadedBytes))) back to the file system."
            )
        }
    }
}
