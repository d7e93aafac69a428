/// One folder (`folders.list`, and the result of each folder change).
///
/// References: wherever params take a folder, the daemon accepts, in this order, a full
/// folder id, a path of names joined by `/` (`Work/Projects`, a leading `/` ignored, names
/// compared exactly), or a unique id prefix (at least 4 hex digits). `""` and `"/"` are the
/// root: Uncategorized for notes, the top level for folders.
public struct FolderInfo: Codable, Hashable, Sendable {
    public var id: String
    /// The shortest unique id prefix, at least 8 characters.
    public var short: String
    /// Never empty, never contains `/`.
    public var name: String
    /// The parent folder id; `nil` at the top level.
    public var parent: String?
    /// Names from the top level down, joined by `/`.
    public var path: String
    /// Notes directly in this folder, not in the Trash.
    public var noteCount: Int

    public init(id: String, short: String, name: String, parent: String?, path: String, noteCount: Int) {
        self.id = id
        self.short = short
        self.name = name
        self.parent = parent
        self.path = path
        self.noteCount = noteCount
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(short, forKey: .short)
        try container.encode(name, forKey: .name)
        try container.encodeNullable(parent, forKey: .parent)
        try container.encode(path, forKey: .path)
        try container.encode(noteCount, forKey: .noteCount)
    }
}

/// `folders.create` params.
public struct FolderCreateParams: Codable, Hashable, Sendable {
    /// The new folder's name: not empty, no `/`, surrounding white space trimmed.
    public var name: String
    /// A folder reference; absent or `null`: the top level.
    public var parent: String?

    public init(name: String, parent: String? = nil) {
        self.name = name
        self.parent = parent
    }
}

/// `folders.rename` params.
public struct FolderRenameParams: Codable, Hashable, Sendable {
    public var folder: String
    public var name: String

    public init(folder: String, name: String) {
        self.folder = folder
        self.name = name
    }
}

/// `folders.move` params.
public struct FolderMoveParams: Codable, Hashable, Sendable {
    public var folder: String
    /// The new parent, a folder reference; absent or `null`: the top level.
    public var parent: String?

    public init(folder: String, parent: String? = nil) {
        self.folder = folder
        self.parent = parent
    }
}

/// `folders.delete` params.
public struct FolderDeleteParams: Codable, Hashable, Sendable {
    public var folder: String
    /// Delete even when not empty: its notes then show in Uncategorized and its subfolders at
    /// the top level (docs/merge.md). Absent: `false`, and a non-empty folder is `folderNotEmpty`.
    public var force: Bool?

    public init(folder: String, force: Bool? = nil) {
        self.folder = folder
        self.force = force
    }
}

/// `folders.delete` result.
public struct FolderDeleteResult: Codable, Hashable, Sendable {
    public var id: String
    /// The path the folder had.
    public var path: String
    /// Notes that were directly in it (now Uncategorized).
    public var notes: Int
    /// Subfolders that were directly in it (now at the top level).
    public var folders: Int

    public init(id: String, path: String, notes: Int, folders: Int) {
        self.id = id
        self.path = path
        self.notes = notes
        self.folders = folders
    }
}
