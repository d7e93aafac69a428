/// One control-socket method: its wire name and the types of its `params` and `result`.
/// The conforming types live in `ControlMethods`; docs/control-protocol.md describes each.
public protocol ControlMethod {
    associatedtype Params: Codable & Hashable & Sendable
    associatedtype Result: Codable & Hashable & Sendable
    static var name: String { get }
}

/// `params` of the methods that take none (`{}`; absent and `null` are accepted too).
public struct EmptyParams: Codable, Hashable, Sendable {
    public init() {}
}

/// Every method the daemon serves, by wire name.
public enum ControlMethods {
    public enum Status: ControlMethod {
        public typealias Params = EmptyParams
        public typealias Result = StatusResult
        public static let name = "status"
    }

    public enum DevicesList: ControlMethod {
        public typealias Params = EmptyParams
        public typealias Result = [DeviceInfo]
        public static let name = "devices.list"
    }

    public enum DevicesRemove: ControlMethod {
        public typealias Params = DeviceRemoveParams
        public typealias Result = DeviceInfo
        public static let name = "devices.remove"
    }

    public enum Invite: ControlMethod {
        public typealias Params = EmptyParams
        public typealias Result = InviteResult
        public static let name = "invite"
    }

    public enum Join: ControlMethod {
        public typealias Params = JoinParams
        public typealias Result = JoinResult
        public static let name = "join"
    }

    public enum Connect: ControlMethod {
        public typealias Params = ConnectParams
        public typealias Result = PeerStatus
        public static let name = "connect"
    }

    public enum NotesList: ControlMethod {
        public typealias Params = NotesListParams
        public typealias Result = [NoteSummary]
        public static let name = "notes.list"
    }

    public enum NotesGet: ControlMethod {
        public typealias Params = NoteGetParams
        public typealias Result = NoteDocument
        public static let name = "notes.get"
    }

    public enum NotesCreate: ControlMethod {
        public typealias Params = NoteCreateParams
        public typealias Result = NoteSummary
        public static let name = "notes.create"
    }

    public enum NotesUpdate: ControlMethod {
        public typealias Params = NoteUpdateParams
        public typealias Result = NoteSummary
        public static let name = "notes.update"
    }

    public enum NotesTrash: ControlMethod {
        public typealias Params = NoteReference
        public typealias Result = NoteSummary
        public static let name = "notes.trash"
    }

    public enum NotesRestore: ControlMethod {
        public typealias Params = NoteReference
        public typealias Result = NoteSummary
        public static let name = "notes.restore"
    }

    public enum NotesPurge: ControlMethod {
        public typealias Params = NotePurgeParams
        public typealias Result = PurgeResult
        public static let name = "notes.purge"
    }

    public enum NotesHistory: ControlMethod {
        public typealias Params = NoteHistoryParams
        public typealias Result = [HistoryEntry]
        public static let name = "notes.history"
    }

    public enum NotesGetRevision: ControlMethod {
        public typealias Params = NoteRevisionParams
        public typealias Result = NoteDocument
        public static let name = "notes.getRevision"
    }

    public enum NotesRestoreRevision: ControlMethod {
        public typealias Params = RestoreRevisionParams
        public typealias Result = RestoreRevisionResult
        public static let name = "notes.restoreRevision"
    }

    public enum FoldersList: ControlMethod {
        public typealias Params = EmptyParams
        public typealias Result = [FolderInfo]
        public static let name = "folders.list"
    }

    public enum FoldersCreate: ControlMethod {
        public typealias Params = FolderCreateParams
        public typealias Result = FolderInfo
        public static let name = "folders.create"
    }

    public enum FoldersRename: ControlMethod {
        public typealias Params = FolderRenameParams
        public typealias Result = FolderInfo
        public static let name = "folders.rename"
    }

    public enum FoldersMove: ControlMethod {
        public typealias Params = FolderMoveParams
        public typealias Result = FolderInfo
        public static let name = "folders.move"
    }

    public enum FoldersDelete: ControlMethod {
        public typealias Params = FolderDeleteParams
        public typealias Result = FolderDeleteResult
        public static let name = "folders.delete"
    }

    public enum Sync: ControlMethod {
        public typealias Params = SyncParams
        public typealias Result = SyncResult
        public static let name = "sync"
    }

    /// With `toDescriptor`, the request line carries the descriptor to write to (`SCM_RIGHTS`).
    public enum Backup: ControlMethod {
        public typealias Params = BackupParams
        public typealias Result = BackupResult
        public static let name = "backup"
    }

    /// After its result, the connection also carries `event` notifications (`ControlEvent`).
    public enum Watch: ControlMethod {
        public typealias Params = EmptyParams
        public typealias Result = WatchResult
        public static let name = "watch"
    }

    /// Every method's wire name, for the server's "method not found" check and for tests.
    public static let names: [String] = [
        Status.name, DevicesList.name, DevicesRemove.name, Invite.name, Join.name, Connect.name,
        NotesList.name, NotesGet.name, NotesCreate.name, NotesUpdate.name, NotesTrash.name,
        NotesRestore.name, NotesPurge.name, NotesHistory.name, FoldersList.name, FoldersCreate.name,
        FoldersRename.name, FoldersMove.name, FoldersDelete.name, Sync.name, Watch.name,
        MarkdownParse.name, MarkdownParseMany.name, NotesCreateMany.name, NotesGetRevision.name, NotesRestoreRevision.name,
        Backup.name,
    ]
}
