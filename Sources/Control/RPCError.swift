/// A JSON-RPC error code. The standard codes are JSON-RPC 2.0's; the application codes are
/// notesd's (see docs/control-protocol.md, "Errors"). An open set: a code this build does not
/// know still decodes, so an older `notesctl` can print a newer daemon's errors.
public struct ControlErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    // JSON-RPC 2.0 (https://www.jsonrpc.org/specification#error_object)
    /// The line is not valid JSON (or not UTF-8).
    public static let parseError = ControlErrorCode(rawValue: -32700)
    /// Valid JSON that is not a request: not an object, no usable `id`, wrong `jsonrpc`,
    /// no `method`, or a line over the length cap.
    public static let invalidRequest = ControlErrorCode(rawValue: -32600)
    public static let methodNotFound = ControlErrorCode(rawValue: -32601)
    /// `params` missing a required key, a value of the wrong type, or an unusable value.
    public static let invalidParams = ControlErrorCode(rawValue: -32602)
    /// A bug or an unexpected failure inside the daemon.
    public static let internalError = ControlErrorCode(rawValue: -32603)

    // notesd
    /// No note, folder or device matches the reference. `data`: `NotFoundData`.
    public static let notFound = ControlErrorCode(rawValue: 1000)
    /// An id prefix or folder path matches several records. `data`: `AmbiguousData`.
    public static let ambiguousReference = ControlErrorCode(rawValue: 1001)
    /// A folder with that name already exists in that parent. `data`: `AlreadyExistsData`.
    public static let alreadyExists = ControlErrorCode(rawValue: 1002)
    /// `folders.delete` without `force` on a folder holding notes or folders.
    /// `data`: `FolderNotEmptyData`.
    public static let folderNotEmpty = ControlErrorCode(rawValue: 1003)
    /// A well-formed request the current state does not allow (e.g. removing this device,
    /// moving a folder into its own subtree).
    public static let invalidOperation = ControlErrorCode(rawValue: 1004)
    /// This device belongs to no household (it was removed from one).
    public static let notInHousehold = ControlErrorCode(rawValue: 1010)
    /// Pairing with the inviting device failed (handshake refused or interrupted).
    public static let pairingFailed = ControlErrorCode(rawValue: 1011)
    /// The invite code is malformed or its checksum is wrong (checked before any network use).
    public static let inviteInvalid = ControlErrorCode(rawValue: 1012)
    /// The invite code has expired (invites live 10 minutes).
    public static let inviteExpired = ControlErrorCode(rawValue: 1013)
    /// The invite code was already used by another device.
    public static let inviteUsed = ControlErrorCode(rawValue: 1014)
    /// No connection could be made to the address (or discovery found no such device).
    /// `data`: `UnreachableData`.
    public static let peerUnreachable = ControlErrorCode(rawValue: 1015)
    /// The operation did not finish in time. For `sync`, `data` is the `SyncResult` at the
    /// deadline.
    public static let timeout = ControlErrorCode(rawValue: 1020)
    /// The database failed (disk full, I/O error, corruption). `data`: `DatabaseErrorData`.
    public static let databaseError = ControlErrorCode(rawValue: 1030)
    /// The connecting user may not use this daemon (SO_PEERCRED check).
    public static let permissionDenied = ControlErrorCode(rawValue: 1040)

    /// A stable name for messages and `--json` consumers, e.g. `notFound`.
    public var name: String {
        switch self {
        case .parseError: "parseError"
        case .invalidRequest: "invalidRequest"
        case .methodNotFound: "methodNotFound"
        case .invalidParams: "invalidParams"
        case .internalError: "internalError"
        case .notFound: "notFound"
        case .ambiguousReference: "ambiguousReference"
        case .alreadyExists: "alreadyExists"
        case .folderNotEmpty: "folderNotEmpty"
        case .invalidOperation: "invalidOperation"
        case .notInHousehold: "notInHousehold"
        case .pairingFailed: "pairingFailed"
        case .inviteInvalid: "inviteInvalid"
        case .inviteExpired: "inviteExpired"
        case .inviteUsed: "inviteUsed"
        case .peerUnreachable: "peerUnreachable"
        case .timeout: "timeout"
        case .databaseError: "databaseError"
        case .permissionDenied: "permissionDenied"
        default: "error\(rawValue)"
        }
    }

    public var description: String { "\(rawValue) (\(name))" }
}

/// The `error` member of a response: a code, one sentence saying what went wrong and what to
/// do, and optional structured `data` (typed per code, see the `…Data` structs).
public struct RPCError: Error, Hashable, Sendable, Codable, CustomStringConvertible {
    public var code: ControlErrorCode
    public var message: String
    public var data: JSONValue?

    public init(code: ControlErrorCode, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// An error with typed `data`; data that cannot be encoded is left out rather than
    /// hiding the error itself.
    public init(code: ControlErrorCode, message: String, encoding data: some Encodable) {
        self.init(code: code, message: message, data: try? JSONValue(encoding: data))
    }

    /// The `data` read back as its typed form, or `nil` when absent or of another shape.
    public func data<T: Decodable>(as type: T.Type) -> T? {
        guard let data else { return nil }
        return try? data.decode(as: T.self)
    }

    public var description: String { message }
}

/// The kind of record a reference names, in `notFound` and `ambiguousReference` data.
public enum ReferenceKind: String, Hashable, Sendable, Codable {
    case note, folder, device
}

/// `data` of `notFound`.
public struct NotFoundData: Hashable, Sendable, Codable {
    public var kind: ReferenceKind
    /// The reference as the client sent it.
    public var reference: String

    public init(kind: ReferenceKind, reference: String) {
        self.kind = kind
        self.reference = reference
    }
}

/// `data` of `ambiguousReference`: every record the reference matched.
public struct AmbiguousData: Hashable, Sendable, Codable {
    public struct Candidate: Hashable, Sendable, Codable {
        /// The full id.
        public var id: String
        /// A human label: the note title, folder path or device name.
        public var label: String

        public init(id: String, label: String) {
            self.id = id
            self.label = label
        }
    }

    public var kind: ReferenceKind
    public var reference: String
    public var candidates: [Candidate]

    public init(kind: ReferenceKind, reference: String, candidates: [Candidate]) {
        self.kind = kind
        self.reference = reference
        self.candidates = candidates
    }
}

/// `data` of `alreadyExists`: the folder that is already there.
public struct AlreadyExistsData: Hashable, Sendable, Codable {
    public var kind: ReferenceKind
    public var id: String
    public var path: String

    public init(kind: ReferenceKind, id: String, path: String) {
        self.kind = kind
        self.id = id
        self.path = path
    }
}

/// `data` of `folderNotEmpty`: what the folder still holds (trashed notes excluded).
public struct FolderNotEmptyData: Hashable, Sendable, Codable {
    public var id: String
    public var path: String
    public var notes: Int
    public var folders: Int

    public init(id: String, path: String, notes: Int, folders: Int) {
        self.id = id
        self.path = path
        self.notes = notes
        self.folders = folders
    }
}

/// `data` of `peerUnreachable`.
public struct UnreachableData: Hashable, Sendable, Codable {
    /// The `host:port` tried, or `nil` when discovery found nothing to try.
    public var address: String?

    public init(address: String?) { self.address = address }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeNullable(address, forKey: .address)
    }
}

/// `data` of `databaseError`.
public struct DatabaseErrorData: Hashable, Sendable, Codable {
    /// The SQLite extended result code.
    public var sqliteCode: Int32

    public init(sqliteCode: Int32) { self.sqliteCode = sqliteCode }
}

/// `data` of the `invalidRequest` sent for an over-long line.
public struct LineTooLongData: Hashable, Sendable, Codable {
    public var maximumLineLength: Int

    public init(maximumLineLength: Int) { self.maximumLineLength = maximumLineLength }
}

extension RPCError {
    /// The protocol errors, worded the same everywhere. Application errors with records to
    /// name are built by the daemon with these as the pattern.
    public static func parseError(_ detail: String) -> RPCError {
        RPCError(code: .parseError, message: "The request is not valid JSON (\(detail)); send one UTF-8 JSON object per line.")
    }

    public static func invalidRequest(_ detail: String) -> RPCError {
        RPCError(code: .invalidRequest, message: "Invalid request: \(detail).")
    }

    public static func lineTooLong(maximum: Int) -> RPCError {
        RPCError(
            code: .invalidRequest,
            message: "The request line is longer than \(maximum) bytes; send smaller notes or split the work into several requests.",
            encoding: LineTooLongData(maximumLineLength: maximum))
    }

    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(
            code: .methodNotFound,
            message: "This daemon has no method \"\(method)\"; check that notesctl and notesd are the same version.")
    }

    public static func invalidParams(_ detail: String) -> RPCError {
        RPCError(code: .invalidParams, message: "Invalid params: \(detail).")
    }

    public static func internalError(_ detail: String) -> RPCError {
        RPCError(code: .internalError, message: "Internal daemon error: \(detail); see the notesd log (journalctl --user -u notesd).")
    }

    /// A request whose answer would not fit on one line (`notes.list` of a 100,000-note library
    /// without `limit`). Not a fault of the daemon's: it says how to ask for less, and the
    /// log has nothing more. Still `internalError`, the code clients have always had for it.
    public static func answerTooLarge(bytes: Int, maximum: Int) -> RPCError {
        RPCError(
            code: .internalError,
            message: "The answer is \(bytes) bytes, over the \(maximum)-byte line limit; ask for less at a time: `notes.list` takes `limit` and `after` to read page by page, as `notesctl ls` does.")
    }

    public static func notFound(_ kind: ReferenceKind, _ reference: String) -> RPCError {
        let hint = switch kind {
        case .note: "list notes with `notesctl ls`"
        case .folder: "list folders with `notesctl folders`"
        case .device: "list devices with `notesctl devices`"
        }
        return RPCError(
            code: .notFound, message: "No \(kind.rawValue) matches \"\(reference)\"; \(hint).",
            encoding: NotFoundData(kind: kind, reference: reference))
    }

    public static func ambiguous(_ kind: ReferenceKind, _ reference: String, candidates: [AmbiguousData.Candidate]) -> RPCError {
        RPCError(
            code: .ambiguousReference,
            message: "\"\(reference)\" matches \(candidates.count) \(kind.rawValue)s; give more characters of the id.",
            encoding: AmbiguousData(kind: kind, reference: reference, candidates: candidates))
    }

    /// `timeout` with the state at the deadline as `data` (for `sync`: the `SyncResult`).
    public static func timeout(_ operation: String, data: some Encodable) -> RPCError {
        RPCError(
            code: .timeout,
            message: "\(operation) did not finish in time; check `notesctl status` for unreachable peers, or allow longer.",
            encoding: data)
    }
}
