import Engine
import Foundation
import Peer

/// `notesd --restore-backup FILE [--data-dir DIR]` (docs/systemd.md, "Backups"): with the
/// daemon stopped, installs a backup as the data directory's library under a new replica id,
/// keeping the device key, the household key and the roster (docs/architecture.md, "Backups").
enum RestoreBackupCommand {
    static func run(file: String, dataDirectory: String) -> DaemonExitStatus {
        switch restore(file: file, dataDirectory: dataDirectory) {
        case .success(let message):
            print(message)
            return .success
        case .failure(let failure):
            FileHandle.standardError.write(Data("notesd: \(failure.message)\n".utf8))
            return .failure
        }
    }

    struct Failure: Error {
        let message: String
    }

    static func restore(file: String, dataDirectory: String) -> Result<String, Failure> {
        let keyPath = dataDirectory + "/" + HouseholdKey.fileName
        guard FileManager.default.fileExists(atPath: keyPath) else {
            return .failure(Failure(message: "\(dataDirectory) holds no household key (\(HouseholdKey.fileName)), so it is not a device of any household; a backup restores the library of a device that still has its keys. To bring a wiped device back, join the household again with `notesctl join`"))
        }
        do {
            let household = try HouseholdKey(directory: dataDirectory).householdID
            let report = try Replica.restoreBackup(
                from: file, toDatabase: dataDirectory + "/notes.db", household: household,
                now: UInt64(Date().timeIntervalSince1970 * 1000))
            var lines = [
                "Restored \(file) into \(dataDirectory): this device now writes as replica \(report.newReplica.description.prefix(8)) (was \(report.oldReplica.description.prefix(8))).",
            ]
            if report.droppedEntries > 0 {
                lines.append("\(report.droppedEntries) of its own changes no other device had seen when the backup was taken were left out; the household sends back whatever became of them.")
            }
            if report.keptEntries > 0 {
                lines.append("\(report.keptEntries) of its own changes no other device had seen, which cannot have changed since, are kept and will be sent under the new replica id.")
            }
            if let previous = report.previousLibrary { lines.append("The library it replaced is kept as \(previous).") }
            lines.append("Start notesd again; it catches up with the household at the next sync.")
            return .success(lines.joined(separator: "\n"))
        } catch let error as BackupRestoreError {
            return .failure(Failure(message: "refusing to restore: \(error)"))
        } catch let error as FileLock.Busy {
            return .failure(Failure(message: "notesd is running on \(dataDirectory) (\(error.path) is held); stop it first (systemctl --user stop notesd), then restore"))
        } catch {
            return .failure(Failure(message: "cannot restore \(file): \(error)"))
        }
    }
}
