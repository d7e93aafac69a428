import Engine
import EngineHarness
import Foundation
import Merge
@testable import Peer

/// The backup faults (docs/architecture.md, "Backups"): a member's database copied while it
/// runs, and later installed in its place with the device stopped, under a new replica id.
/// What the device wrote after the backup and no other device received is gone with the
/// restore, by design; everything any other device holds must come back to it.
extension Simulation {
    func backUp(_ node: VirtualLAN.Node) throws {
        guard let core = node.core else { return }
        backupCounter += 1
        let path = lan.directory + "/backup-\(node.index)-\(backupCounter).db"
        do {
            // What the daemon's `backup` does first: the copy says which household it is of,
            // and the copy's connection is announced (a catch-up goes back into the log).
            try lan.request(node) {
                try $0.replica.recordHousehold($0.household.householdID)
                try $0.replica.connectionBesideOpening()
            }
        } catch is SimulatedCrash {
            return
        }
        defer { core.replica.connectionBesideClosed() }
        _ = try OnlineBackup.copy(from: core.replica.path, to: path)
        backups[node.index] = path
        lan.trace.append("\(node.name) backs up (\(core.replica.vector))")
    }

    /// Every token in the libraries of the devices other than `node` (their files, up or down):
    /// what a restore or a wipe of `node` cannot take away.
    func tokensHeld(byAllBut node: VirtualLAN.Node) throws -> Set<String> {
        var held = Set<String>()
        for other in nodes where other !== node {
            if let core = other.core {
                held.formUnion(try Self.tokens(in: core.replica))
            } else {
                held.formUnion(try Self.tokens(inLibraryAt: other.directory + "/notes.db"))
            }
        }
        return held
    }

    /// `value` as the trace says it, without this run's temporary directory: a seed's history
    /// must read the same in every run.
    private func withoutRunDirectory(_ value: Any) -> String {
        String(describing: value).replacingOccurrences(of: lan.directory, with: "…")
    }

    func restore(_ node: VirtualLAN.Node, from backup: String) throws {
        lan.crash(node)
        let database = node.directory + "/notes.db"
        // The tokens this restore takes away: in the device's library now, not in the library
        // the restore installs (which also drops the backup's own entries that no peer had
        // been offered), and held by no other device (their files, up or down).
        let current = try Self.tokens(inLibraryAt: database)
        let elsewhere = try tokensHeld(byAllBut: node)
        do {
            let household = try HouseholdKey(directory: node.directory).householdID
            let report = try Replica.restoreBackup(from: backup, toDatabase: database, household: household, now: lan.now, randomBytes: { [unowned lan] in lan.random.bytes($0) })
            let restored = try Self.tokens(inLibraryAt: database)
            removed.formUnion(current.subtracting(restored).subtracting(elsewhere))
            restores += 1
            lan.trace.append("\(node.name) restores its backup \(backup.split(separator: "/").last!): \(withoutRunDirectory(report))")
        } catch let error as BackupRestoreError {
            // A backup of the household the device has since left for another is refused,
            // as `notesd --restore-backup` refuses it.
            lan.trace.append("\(node.name) cannot restore \(backup.split(separator: "/").last!): \(withoutRunDirectory(error))")
        }
        try launch(node)
    }

    static func tokens(in replica: Replica) throws -> Set<String> {
        var tokens = Set<String>()
        for trashed in [false, true] {
            for summary in try replica.listNotes(NoteFilter(trashed: trashed)) {
                if let note = try replica.note(summary.id) { tokens.formUnion(Self.tokens(in: note)) }
            }
        }
        return tokens
    }

    static func tokens(inLibraryAt path: String) throws -> Set<String> {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        return try tokens(in: Replica(path: path))
    }
}
