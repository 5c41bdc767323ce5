import Foundation

extension GroupGraph {
    /// The devices among `active` that came in at the same time as a revocation of `device` this log
    /// holds, whether or not that revocation has effect, and the devices they admitted in turn: a
    /// revoking member shuts them out with the device (``Vault/revoke(device:)-6ww9w``).
    ///
    /// Such a device joined with the passphrase while a member was revoking `device` (a revocation
    /// closes passphrase joins: had that one counted, rule 4 voided the join), or was approved by
    /// `device` itself in an entry that revocation did not know (rule 2 voided it then). The earlier
    /// revocation may have lost its effect: a stolen device's copy that closes the door (a rekey,
    /// approval-only joins) after taking in a made-up device, and reaches a member before the
    /// revocation does, voids the revoker's own join, and with it the revocation. When a member then
    /// revokes the device itself, as the threat model asks, the made-up devices go too (red team
    /// round 35, F1: they stayed members, and read what was written afterwards).
    ///
    /// In canonical order of their admissions, without `device` and `except` (the revoking device).
    func admittedBesideRevocations(of device: UUID, active: Set<UUID>, except: UUID) -> [UUID] {
        let revocations = revocationsOf[device] ?? []
        guard !revocations.isEmpty else { return [] }
        var taken: [UUID] = []
        var takenSet: Set<UUID> = [device, except]
        func take(_ candidate: UUID) {
            guard active.contains(candidate), !takenSet.contains(candidate) else { return }
            takenSet.insert(candidate)
            taken.append(candidate)
        }
        for (index, entry) in entries.enumerated() where !founding.contains(index) {
            let besideRevocation = revocations.contains { concurrent(index, $0) }
            guard besideRevocation else { continue }
            switch entry.change {
            case .joined: take(entry.author)
            case .added(let admitted, _, _, _, _) where entry.author == device: take(admitted)
            default: break
            }
        }
        // The devices those admitted in turn, whatever their admission knew.
        var grew = true
        while grew {
            grew = false
            for entry in entries {
                guard case .added(let admitted, _, _, _, _) = entry.change, takenSet.contains(entry.author),
                    entry.author != device, entry.author != except, !takenSet.contains(admitted),
                    active.contains(admitted)
                else { continue }
                take(admitted)
                grew = true
            }
        }
        return taken
    }
}
