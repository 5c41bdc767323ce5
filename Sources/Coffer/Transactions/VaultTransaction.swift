public import Foundation

/// Writes to the keychain and the blob tier that become visible together, or not at all: a photo
/// and the item describing it, a document and its index entry (``Vault/write(_:)-63bov``).
///
/// Each call checks and seals what it is given at once, and a blob's content streams into the vault
/// then, in bounded memory, under a `pending` entry that keeps it invisible; nothing else is written
/// until the closure returns. Then one transaction takes every blob's last chunks and writes, in the
/// order they were called, every item change, blob manifest and deletion. If the closure throws, a
/// call fails, or that transaction fails (an item that already exists, a blob deleted meanwhile, a
/// full disk), nothing is visible and the content streamed is released; if the process dies first,
/// the next writer or `coffer gc` releases it.
///
/// Reads made inside the closure (through `vault.keychain` or `vault.blobs`) see the vault as it
/// was: what the transaction writes is not visible to anyone, itself included, until it commits.
/// A transaction belongs to the closure it is given to; it cannot be kept or used after.
public final class VaultTransaction {
    /// One change, run in the final transaction.
    private enum Step {
        case change((Transaction) throws -> Void)
        /// A blob whose content is stored (its pipeline's threads already stopped, so a transaction
        /// of many blobs holds no threads) and whose last batch and manifest wait for the commit.
        case blob(BlobWriter.StagedBlob, ContentSession<Void>.LastBatch)
    }

    private let vault: Vault
    private var steps: [Step] = []
    private var isOpen = true

    init(vault: Vault) { self.vault = vault }

    /// The keychain writes of this transaction.
    public var keychain: KeychainWrites { KeychainWrites(transaction: self) }

    /// The blob writes of this transaction.
    public var blobs: BlobWrites { BlobWrites(transaction: self) }

    private func checkOpen() throws(CofferError) {
        guard isOpen else {
            throw CofferError(.param, "the transaction has ended: use it only inside the closure given to vault.write")
        }
    }

    fileprivate func stage(_ change: () throws(CofferError) -> (Transaction) throws -> Void) throws(CofferError) {
        try checkOpen()
        steps.append(.change(try change()))
    }

    fileprivate func stageBlob(
        _ name: String,
        from source: inout some ByteSource,
        options: BlobWriteOptions
    ) throws(CofferError) {
        try checkOpen()
        let writer = try vault.blobs.writer(name, options: options, progress: nil)
        let staged = try writer.stage(from: &source)
        let last: ContentSession<Void>.LastBatch
        do {
            last = try staged.session.committed()
        } catch {
            staged.session.abandon(error)
            throw error
        }
        staged.session.close()
        steps.append(.blob(staged, last))
    }

    private var sessions: [ContentSession<Void>] {
        steps.compactMap {
            if case .blob(let staged, _) = $0 { return staged.session }
            return nil
        }
    }

    /// Makes everything staged visible in one transaction; on failure, releases every blob's content.
    func commit() throws(CofferError) {
        try checkOpen()
        isOpen = false
        do {
            let steps = steps
            try storage("committing the transaction") {
                try vault.environment.write { txn in
                    for step in steps {
                        switch step {
                        case .change(let apply):
                            try apply(txn)
                        case .blob(let staged, let last):
                            try last.retain(in: txn)
                            _ = try staged.commit(txn, last.context)
                        }
                    }
                }
            }
        } catch {
            abandon(error)
            throw error
        }
    }

    /// Ends the transaction without writing anything, releasing every blob's content.
    func abandon(_ error: CofferError) {
        isOpen = false
        for session in sessions { session.abandon(error) }
    }
}

extension VaultTransaction {
    /// The keychain writes of a ``VaultTransaction``, as ``Keychain``'s: each is checked and sealed
    /// when called, and stored when the transaction commits.
    public struct KeychainWrites {
        private let transaction: VaultTransaction
        private var keychain: Keychain { transaction.vault.keychain }

        fileprivate init(transaction: VaultTransaction) { self.transaction = transaction }

        /// Adds an item; see ``Keychain/add(_:)-1xnau``. `.duplicateItem` comes when the
        /// transaction commits, and then nothing of it is written.
        public func add(_ item: KeychainItem) throws(CofferError) {
            try add(contentsOf: [item])
        }

        /// Adds several items; see ``Keychain/add(contentsOf:)-69zp7``.
        public func add(contentsOf items: [KeychainItem]) throws(CofferError) {
            try transaction.stage { () throws(CofferError) in try keychain.stagedAdd(contentsOf: items) }
        }

        /// Adds or replaces an item; see ``Keychain/upsert(_:)-45axg``.
        public func upsert(_ item: KeychainItem) throws(CofferError) {
            try transaction.stage { () throws(CofferError) in
                let apply = try keychain.stagedSave(item, keeping: [])
                return { txn in _ = try apply(txn) }
            }
        }

        /// Stores a generic password, keeping the replaced item's scope and protection unless named;
        /// see ``Keychain/setPassword(_:service:account:accessibility:scope:)-2mz03``.
        public func setPassword(
            _ password: String,
            service: String,
            account: String,
            accessibility: Accessibility? = nil,
            scope: SyncScope? = nil
        ) throws(CofferError) {
            try save(Data(password.utf8), service: service, account: account, accessibility, scope)
        }

        /// Stores a `Codable` value as JSON, as ``Keychain/set(_:for:accessibility:scope:)-(Encodable,_,_,_)``.
        public func set(
            _ value: some Encodable,
            for key: KeychainKey,
            accessibility: Accessibility? = nil,
            scope: SyncScope? = nil
        ) throws(CofferError) {
            try save(
                try Keychain.encoded(value, for: key),
                service: key.service,
                account: key.account,
                accessibility,
                scope
            )
        }

        private func save(
            _ value: Data,
            service: String,
            account: String,
            _ accessibility: Accessibility?,
            _ scope: SyncScope?
        ) throws(CofferError) {
            try transaction.stage { () throws(CofferError) in
                let apply = try keychain.stagedValueUpdate(
                    value,
                    service: service,
                    account: account,
                    accessibility,
                    scope
                )
                return { txn in _ = try apply(txn) }
            }
        }

        /// Updates every item matching `query`; see ``Keychain/update(_:with:)-2bwpa``.
        /// `.itemNotFound` comes when the transaction commits, and then nothing of it is written.
        public func update(_ query: ItemQuery, with changes: ItemUpdate) throws(CofferError) {
            try transaction.stage { () throws(CofferError) in
                let apply = try keychain.stagedUpdate(query, with: changes)
                return { txn in _ = try apply(txn) }
            }
        }

        /// Deletes every item matching `query`; see ``Keychain/delete(_:)-78id9``.
        /// `.itemNotFound` comes when the transaction commits, and then nothing of it is written.
        public func delete(_ query: ItemQuery) throws(CofferError) {
            try transaction.stage { () throws(CofferError) in
                let apply = try keychain.stagedDelete(query)
                return { txn in _ = try apply(txn) }
            }
        }
    }

    /// The blob writes of a ``VaultTransaction``, as ``Blobs``'s: a write streams its content when
    /// called, and the blob appears (replacing any of its name) when the transaction commits.
    public struct BlobWrites {
        private let transaction: VaultTransaction

        fileprivate init(transaction: VaultTransaction) { self.transaction = transaction }

        /// Stores `data` as the blob `name`; see ``Blobs/write(_:data:options:progress:)-(_,DataProtocol,_,_)``.
        public func write(
            _ name: String,
            data: some DataProtocol,
            options: BlobWriteOptions = BlobWriteOptions()
        ) throws(CofferError) {
            var source = DataSource(data)
            try transaction.stageBlob(name, from: &source, options: options)
        }

        /// Stores the contents of the file at `url` as the blob `name`, streaming it; see
        /// ``Blobs/write(_:contentsOf:options:progress:)-3ln0e``.
        public func write(
            _ name: String,
            contentsOf url: URL,
            options: BlobWriteOptions = BlobWriteOptions()
        ) throws(CofferError) {
            try transaction.vault.refuseOwnFile(url, reading: true)
            let file = try InputFile(path: url.path)
            let source = FileDescriptorSource(descriptor: file.descriptor)
            if let size = InputFile.regularFileSize(file.descriptor) {
                var bounded = BoundedSource(source, limit: UInt64(size))
                try transaction.stageBlob(name, from: &bounded, options: options)
            } else {
                var unbounded = source
                try transaction.stageBlob(name, from: &unbounded, options: options)
            }
        }

        /// Deletes the blob `name`; see ``Blobs/delete(_:)-3dciy``. `.itemNotFound` comes when the
        /// transaction commits, and then nothing of it is written.
        public func delete(_ name: String) throws(CofferError) {
            try transaction.stage { () throws(CofferError) in try transaction.vault.blobs.stagedDelete(name) }
        }
    }
}
