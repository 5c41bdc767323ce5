/// The named tables of a vault's LMDB environment (docs/FORMAT.md). All are
/// created with the vault, so opening one never needs to write. A class: it is read on every operation,
/// and passing one reference is cheaper than copying eleven tables.
package final class Schema: Sendable {
    /// The newest format version this build reads and writes: 6, for a vault that packs small
    /// chunk records (docs/FORMAT.md, "Versioning").
    package static let formatVersion: UInt32 = 6

    /// The format version a vault is raised to when it first stores a chunk pack (``ChunkRecords``):
    /// an older Coffer would call the packed chunks missing.
    package static let packedFormatVersion: UInt32 = 6

    /// The format version a vault is raised to when it first offloads a chunk (``StoreContent``):
    /// an older Coffer would call the chunks it no longer holds missing.
    package static let offloadedFormatVersion: UInt32 = 5

    /// The format version a vault is raised to by its first `completeUnlessOpen` record (an older
    /// Coffer would call such records damaged).
    package static let sealedToClassKeyFormatVersion: UInt32 = 4

    /// The format version of a new vault: 2, since nothing of format 3 is used until a rekey, so an
    /// older Coffer of format 2 still opens it.
    package static let newVaultFormatVersion: UInt32 = 2

    /// Table names, in creation order.
    package static let tableNames = [
        "meta", "items", "itemIndex", "chunks", "chunkRefs", "blobs", "snapshots", "pending", "changes",
        "versions", "peers",
    ]

    package let meta: Table
    package let items: Table
    package let itemIndex: Table
    package let chunks: Table
    package let chunkRefs: Table
    package let blobs: Table
    package let snapshots: Table
    package let pending: Table
    package let changes: Table
    package let versions: Table
    package let peers: Table

    /// The local journal of every change (``LocalJournal``), or `nil` in a vault made before it
    /// existed, until its first unlock makes it (``ensureJournal(in:)``).
    package var journal: Table? { journalTable.withLock { $0 } }
    private let journalTable: Locked<Table?>

    /// The tables of packed chunk records (``ChunkRecords``), or `nil` in a vault made before they
    /// existed, until its first unlock makes them (``ensureChunkPacks(in:)``); until then every chunk
    /// record is stored on its own.
    package var packs: ChunkPackTables? { packTables.withLock { $0 } }
    private let packTables: Locked<ChunkPackTables?>

    /// Every chunk record, on its own or packed.
    package var records: ChunkRecords { ChunkRecords(schema: self) }

    /// Where this vault's chunks lie in object stores (``StoreContent``), or `nil` until its first
    /// push or pull to one makes it (``ensureStoreContent(in:)``).
    package var storeContent: Table? { storeContentTable.withLock { $0 } }
    private let storeContentTable: Locked<Table?>

    /// Reads chunks this vault offloaded to an object store, once the sync layer attached one
    /// (``OffloadedChunkSource``); `nil` before.
    package var offloadedChunks: (any OffloadedChunkSource)? {
        get { offloadedChunkSource.withLock { $0 } }
        set { offloadedChunkSource.withLock { $0 = newValue } }
    }
    private let offloadedChunkSource = Locked<(any OffloadedChunkSource)?>(nil)

    /// Uploads a backup's content as it goes, once the sync layer attached the store the vault
    /// offloads to (``ContentUploader``); `nil` before.
    package var contentUploader: (any ContentUploader)? {
        get { uploader.withLock { $0 } }
        set { uploader.withLock { $0 = newValue } }
    }
    private let uploader = Locked<(any ContentUploader)?>(nil)

    /// A random token for the handle this schema belongs to: journal entries carry it, so a handle
    /// tells its own changes from those of other handles and processes.
    package let handleToken = UInt64.random(in: 1...UInt64.max)

    /// Opens (or creates) every table.
    package init(environment: Environment, create: Bool) throws {
        let tables = try environment.openTables(Self.tableNames, create: create)
        (meta, items, itemIndex, chunks, chunkRefs, blobs, snapshots, pending, changes, versions, peers) = (
            tables[0], tables[1], tables[2], tables[3], tables[4], tables[5], tables[6], tables[7], tables[8],
            tables[9], tables[10]
        )
        var journal: Table?
        do {
            journal = try environment.openTables([LocalJournal.tableName], create: create).first
        } catch let error as LMDBError where error.code == .notFound {
            journal = nil
        }
        journalTable = Locked(journal)
        var packs: [Table]?
        do {
            packs = try environment.openTables(ChunkPackTables.names, create: create)
        } catch let error as LMDBError where error.code == .notFound {
            packs = nil
        }
        packTables = Locked(packs.map(ChunkPackTables.init))
        storeContentTable = Locked(try Self.openIfPresent(StoreContent.tableName, in: environment))
    }

    private static func openIfPresent(_ name: String, in environment: Environment) throws -> Table? {
        do {
            return try environment.openTables([name], create: false).first
        } catch let error as LMDBError where error.code == .notFound {
            return nil
        }
    }

    /// Makes the store-content table when the vault first notes where its chunks lie in an object
    /// store (a write, outside any transaction). An older Coffer opens the vault still: it does not
    /// know the table and leaves it alone.
    package func ensureStoreContent(in environment: Environment) throws {
        guard storeContent == nil else { return }
        let table = try environment.openTables([StoreContent.tableName], create: true).first
        storeContentTable.withLock { $0 = table }
    }

    /// Makes the tables of packed chunk records in a vault made before they existed (a write; at
    /// unlock). An older Coffer opens the vault still, until a pack is stored (which raises its
    /// format); processes that opened it before keep storing records on their own.
    package func ensureChunkPacks(in environment: Environment) throws {
        guard packs == nil else { return }
        let tables = try environment.openTables(ChunkPackTables.names, create: true)
        packTables.withLock { $0 = ChunkPackTables(tables) }
    }

    /// Makes the journal of a vault made before it existed (a write; at unlock). Processes that
    /// opened the vault before keep writing no journal entries until they open it again.
    package func ensureJournal(in environment: Environment) throws {
        guard journal == nil else { return }
        let table = try environment.openTables([LocalJournal.tableName], create: true).first
        journalTable.withLock { $0 = table }
    }
}
