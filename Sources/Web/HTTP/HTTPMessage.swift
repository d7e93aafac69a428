import Foundation

/// One request header as it arrived: the name as sent (compared case-insensitively), the
/// value with surrounding whitespace removed by the parser.
public struct HTTPHeader: Hashable, Sendable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    /// Field names are ASCII tokens (RFC 9110 §5.1), so they match ASCII-case-insensitively:
    /// byte by byte, without Foundation's Unicode comparison (which costs an `NSString` per
    /// header on every lookup, and would fold non-ASCII look-alikes together).
    static func namesMatch(_ first: String, _ second: String) -> Bool {
        let one = first.utf8, other = second.utf8
        guard one.count == other.count else { return false }
        for (a, b) in zip(one, other) where a != b {
            guard a | 0x20 == b | 0x20, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(a | 0x20) else { return false }
        }
        return true
    }
}

/// The request line and headers, which is all the checks need: the web server runs them
/// before it reads a byte of the body.
public struct HTTPRequestHead: Hashable, Sendable {
    /// `GET`, `POST`…, exactly as sent (methods are case-sensitive, RFC 9110 §9.1).
    public var method: String
    /// The path of the request target, percent-decoded by the parser, without the query.
    public var path: String
    public var headers: [HTTPHeader]

    public init(method: String, path: String, headers: [HTTPHeader]) {
        self.method = method
        self.path = path
        self.headers = headers
    }

    /// Every value of header `name` (case-insensitive), in order.
    public func values(_ name: String) -> [String] {
        headers.filter { HTTPHeader.namesMatch($0.name, name) }.map(\.value)
    }
}

/// A whole request: its head and its body.
public struct HTTPRequest: Hashable, Sendable {
    public var head: HTTPRequestHead
    public var body: Data

    public init(head: HTTPRequestHead, body: Data = Data()) {
        self.head = head
        self.body = body
    }
}

/// A response value: what the web server writes, with the headers every response carries
/// already added (`WebHeaders.common`).
public struct HTTPResponse: Hashable, Sendable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: Data
    /// Close the connection after this response (bad input, a refused request whose body was
    /// not read).
    public var closesConnection: Bool

    public init(status: Int, contentType: String?, body: Data, closesConnection: Bool = false, extraHeaders: [HTTPHeader] = []) {
        self.status = status
        var headers = WebHeaders.common
        if let contentType { headers.append(HTTPHeader("Content-Type", contentType)) }
        headers += extraHeaders
        self.headers = headers
        self.body = body
        self.closesConnection = closesConnection
    }

    /// The value of header `name` (case-insensitive), if present.
    public func header(_ name: String) -> String? {
        headers.first { HTTPHeader.namesMatch($0.name, name) }?.value
    }
}

/// The headers on every response (docs/web.md, "Security"). No CORS header and no
/// `Set-Cookie` is ever added: the API is for the page notesd itself serves, and sessions
/// travel in `Authorization`, never in a cookie (cookies are not scoped by port).
public enum WebHeaders {
    public static let contentSecurityPolicy = "default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'"

    public static let common: [HTTPHeader] = [
        HTTPHeader("Content-Security-Policy", contentSecurityPolicy),
        HTTPHeader("X-Content-Type-Options", "nosniff"),
        HTTPHeader("Referrer-Policy", "no-referrer"),
    ]

    public static let json = "application/json"
    public static let eventStream = "text/event-stream"
}
