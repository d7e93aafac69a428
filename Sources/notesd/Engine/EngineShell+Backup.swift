import Control
import Engine
import Foundation
import Peer

/// `backup` (docs/control-protocol.md): a consistent copy of the live database, taken on a
/// queue of its own through a separate read connection, so the engine keeps syncing and
/// answering while it runs (docs/architecture.md, "Backups").
extension EngineShell {
    /// One backup at a time; a labelled queue, never a global one (see `ControlRequestHandler`).
    static let backupQueue = DispatchQueue(label: "notesd.backup")

    /// The directory `backup` without a descriptor writes to.
    var backupDirectory: String { settings.core.dataDirectory + "/backups" }

    /// Starts a backup (on `queue`); `complete` is called from the backup queue when it is done.
    func startBackup(
        _ params: BackupParams, descriptor: OwnedDescriptor?, complete: @escaping @Sendable (Result<BackupResult, RPCError>) -> Void
    ) {
        let toDescriptor = params.toDescriptor == true
        if toDescriptor, descriptor == nil {
            return complete(.failure(.invalidParams("toDescriptor is set but no file descriptor came with the request (notesctl backup FILE passes one)")))
        }
        if let keep = params.keep, keep < 1 || toDescriptor {
            return complete(.failure(.invalidParams(toDescriptor ? "keep applies only to backups in the data directory" : "keep must be at least 1")))
        }
        let householdID = core.household.householdID
        do {
            // In the database, so the copy says which household it belongs to.
            try replica.recordHousehold(householdID)
            try FileManager.default.createDirectory(atPath: backupDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            return complete(.failure(core.rpcError(error)))
        }
        do {
            // The copy's connection and a bulk write's commits must not wait for each other.
            try replica.connectionBesideOpening()
        } catch {
            return complete(.failure(core.rpcError(error)))
        }
        let source = replica.path, directory = backupDirectory, now = Self.now(), log = log
        Self.backupQueue.async { [self] in
            defer { queue.async { self.replica.connectionBesideClosed() } }
            // Backups run one at a time here, so a partial copy now is one a crash left behind.
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasPrefix(".partial-") {
                unlink(directory + "/" + name)
            }
            let started = ContinuousClock.now
            let stamp = Self.backupStamp(now)
            let partial = directory + "/.partial-\(stamp)-\(UInt32.random(in: 0 ... .max)).db"
            do {
                let copy = try OnlineBackup.copy(from: source, to: partial)
                defer { unlink(partial) }
                let description = try Replica.describeBackup(at: partial)
                var path: String?
                if let descriptor {
                    let input = open(partial, O_RDONLY | O_CLOEXEC)
                    guard input >= 0 else { throw SystemError(operation: "open \(partial)", code: errno) }
                    defer { close(input) }
                    try Replica.copyBytes(from: input, to: descriptor.raw, what: "the file notesctl passed")
                } else {
                    let final = Self.unusedName(in: directory, stamp: stamp)
                    guard rename(partial, final) == 0 else { throw SystemError(operation: "move the backup to \(final)", code: errno) }
                    Self.flushDirectory(directory)
                    path = final
                }
                let removed = descriptor == nil ? Self.prune(directory, keep: params.keep) : []
                log.info("backup: \(copy.pages) pages (\(copy.bytes) bytes) in \(copy.steps) steps, \(started.duration(to: .now)), to \(path ?? "the file notesctl passed")")
                complete(.success(BackupResult(
                    path: path, bytes: copy.bytes, household: householdID, replica: description.replica.raw.description,
                    offered: Int64(description.offered), sequence: Int64(description.sequence), removed: removed)))
            } catch let error as OnlineBackup.Failure {
                complete(.failure(RPCError(code: .databaseError, message: error.description)))
            } catch let error as SQLiteError {
                complete(.failure(RPCError(code: .databaseError, message: "the backup failed: \(error.message); check free disk space", encoding: DatabaseErrorData(sqliteCode: error.resultCode))))
            } catch {
                complete(.failure(RPCError(code: .invalidOperation, message: "the backup failed: \(error)")))
            }
        }
    }

    /// `20261201-190755Z` for Unix ms `now`: names sort by time.
    static func backupStamp(_ now: UInt64) -> String {
        var seconds = time_t(now / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d%02d%02d-%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    /// `notes-STAMP.db`, or `notes-STAMP-2.db` … when two backups land in one second.
    static func unusedName(in directory: String, stamp: String) -> String {
        var candidate = directory + "/notes-\(stamp).db"
        var number = 2
        while FileManager.default.fileExists(atPath: candidate) {
            candidate = directory + "/notes-\(stamp)-\(number).db"
            number += 1
        }
        return candidate
    }

    /// Removes all but the newest `keep` backups in `directory`; returns the paths removed.
    static func prune(_ directory: String, keep: Int?) -> [String] {
        guard let keep else { return [] }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasPrefix("notes-") && $0.hasSuffix(".db") }
            .sorted { backupOrder($0) < backupOrder($1) }
        return names.dropLast(keep).compactMap { name in
            let path = directory + "/" + name
            return unlink(path) == 0 ? path : nil
        }
    }

    /// Oldest first: by the time in the name, then by the `-N` of backups made in the same second.
    static func backupOrder(_ name: String) -> (String, Int) {
        let base = name.dropFirst("notes-".count).dropLast(".db".count)
        let parts = base.split(separator: "-")
        if parts.count == 3, let number = Int(parts[2]) { return (parts[0...1].joined(separator: "-"), number) }
        return (String(base), 1)
    }

    /// `fsync` on the directory, so the rename survives a power cut.
    static func flushDirectory(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }
}
