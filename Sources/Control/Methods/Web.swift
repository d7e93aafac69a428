/// The web API's control methods (docs/control-protocol.md, "Web"; docs/web.md).
extension ControlMethods {
    /// A one-time login token for the web app. Served only on the control socket, never
    /// over HTTP: the socket's owner check is what makes a token mean "this user".
    public enum WebLoginToken: ControlMethod {
        public typealias Params = EmptyParams
        public typealias Result = WebLoginTokenResult
        public static let name = "web.loginToken"
    }

    /// The web sessions that are signed in.
    public enum WebSessions: ControlMethod {
        public typealias Params = EmptyParams
        public typealias Result = [WebSessionInfo]
        public static let name = "web.sessions"
    }

    /// Ends every web session.
    public enum WebLogoutAll: ControlMethod {
        public typealias Params = EmptyParams
        public typealias Result = WebLogoutResult
        public static let name = "web.logoutAll"
    }

    /// Full-text search over titles and body text.
    public enum NotesSearch: ControlMethod {
        public typealias Params = NotesSearchParams
        public typealias Result = [SearchHit]
        public static let name = "notes.search"
    }
}

/// `web.loginToken` result.
public struct WebLoginTokenResult: Codable, Hashable, Sendable {
    /// 256 random bits, base64url; works once, until `expires`.
    public var token: String
    /// The link that signs a browser in: `http://127.0.0.1:PORT/#login=TOKEN` (the token
    /// sits in the fragment, which browsers never send to a server or put in a Referer).
    public var url: String
    public var expires: Timestamp

    public init(token: String, url: String, expires: Timestamp) {
        self.token = token
        self.url = url
        self.expires = expires
    }
}

/// One signed-in web session (never its secret).
public struct WebSessionInfo: Codable, Hashable, Sendable {
    /// The first 12 hex digits of the secret's hash: tells sessions apart, reveals nothing.
    public var id: String
    public var created: Timestamp
    public var lastUsed: Timestamp
    /// When it ends unless used again (30 days after `lastUsed`).
    public var expires: Timestamp

    public init(id: String, created: Timestamp, lastUsed: Timestamp, expires: Timestamp) {
        self.id = id
        self.created = created
        self.lastUsed = lastUsed
        self.expires = expires
    }
}

/// `web.logoutAll` result.
public struct WebLogoutResult: Codable, Hashable, Sendable {
    /// Sessions ended.
    public var revoked: Int

    public init(revoked: Int) { self.revoked = revoked }
}

/// The web server as `status` reports it.
public struct WebStatus: Codable, Hashable, Sendable {
    /// `host:port` it serves on; `nil` with `--no-web`.
    public var listen: String?
    /// The address asked for (`--web-listen`, default `127.0.0.1:7480`).
    public var requested: String
    /// The requested port was taken, so a free one was chosen.
    public var fellBack: Bool
    /// Where the app's files are read from.
    public var root: String
    /// Signed-in sessions and open event streams.
    public var sessions: Int
    public var eventStreams: Int

    public init(listen: String?, requested: String, fellBack: Bool, root: String, sessions: Int, eventStreams: Int) {
        self.listen = listen
        self.requested = requested
        self.fellBack = fellBack
        self.root = root
        self.sessions = sessions
        self.eventStreams = eventStreams
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeNullable(listen, forKey: .listen)
        try container.encode(requested, forKey: .requested)
        try container.encode(fellBack, forKey: .fellBack)
        try container.encode(root, forKey: .root)
        try container.encode(sessions, forKey: .sessions)
        try container.encode(eventStreams, forKey: .eventStreams)
    }
}

/// `notes.search` params. Every word of `query` must match (AND), each also as a prefix
/// (search as you type), diacritics and case folded; `folder` and `tag` filter as in
/// `notes.list`. Notes in the Trash are not searched.
public struct NotesSearchParams: Codable, Hashable, Sendable {
    public var query: String
    /// At most this many hits (1…500); absent: 50.
    public var limit: Int?
    public var folder: String?
    public var tag: String?

    public init(query: String, limit: Int? = nil, folder: String? = nil, tag: String? = nil) {
        self.query = query
        self.limit = limit
        self.folder = folder
        self.tag = tag
    }
}

/// One `notes.search` hit, best first (bm25, title words weigh more than body words).
public struct SearchHit: Codable, Hashable, Sendable {
    public var note: NoteSummary
    /// A few words of the title or body around the best match, each matched word between
    /// `\u{2}` and `\u{3}` (STX, ETX): control characters no note text holds, so a client
    /// escapes the text first and then turns the markers into highlighting.
    public var snippet: String
    /// bm25 score (lower is better), for clients that merge result lists.
    public var rank: Double

    public init(note: NoteSummary, snippet: String, rank: Double) {
        self.note = note
        self.snippet = snippet
        self.rank = rank
    }
}

extension SearchHit: DirectJSONEncodable {
    /// Members in sorted key order, as `JSONEncoder` writes them (search as you type sends
    /// one of these answers per keystroke).
    public func writeJSON(to writer: inout JSONWriter) {
        writer.raw(#"{"note":"#); note.writeJSON(to: &writer)
        // bm25 is always finite; were it not, 0 rather than an answer that fails to encode.
        writer.raw(#","rank":"#); writer.double(rank.isFinite ? rank : 0)
        writer.raw(#","snippet":"#); writer.string(snippet)
        writer.raw("}")
    }

    public var estimatedJSONBytes: Int { note.estimatedJSONBytes + snippet.utf8.count + 60 }
}
