import Control
import Foundation

/// The responses the server builds, so every one carries the same headers and its errors
/// the same JSON shape: `{"error": {"status": 401, "message": "…"}}`.
public enum WebResponses {
    /// An HTTP-level error (before or outside JSON-RPC) with a message saying what to do.
    public static func error(_ status: Int, _ message: String, closes: Bool = false, extraHeaders: [HTTPHeader] = []) -> HTTPResponse {
        HTTPResponse(
            status: status, contentType: WebHeaders.json, body: errorBody(status: status, message: message), closesConnection: closes,
            extraHeaders: [HTTPHeader("Cache-Control", "no-store")] + extraHeaders)
    }

    /// `{"error":{"message":"…","status":N}}` and a newline: the bytes `ControlJSON.encoder()`
    /// writes for it (sorted keys, unescaped slashes), built directly because every refusal
    /// builds one and `JSONEncoder` costs far more than the rest of the routing.
    static func errorBody(status: Int, message: String) -> Data {
        var text = #"{"error":{"message":""#
        text.reserveCapacity(message.utf8.count + 48)
        for scalar in message.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += #"","status":\#(status)}}"# + "\n"
        return Data(text.utf8)
    }

    /// What replaces an answer libmicrohttpd writes on its own (a request it cannot parse, a
    /// head too large for its memory): our JSON error with every security header, on a
    /// connection that closes, instead of the library's bare HTML page. The library gives the
    /// status only, so the message says what that status means here.
    public static func libraryError(status: Int) -> HTTPResponse {
        let message = switch status {
        case 400: "the request is not valid HTTP/1.1 (a malformed request line or header); nothing was done"
        case 413, 414, 431: "the request line or headers are too large for this server; send a shorter request"
        case 501: "the request uses an HTTP feature this server does not implement (such as a Transfer-Encoding other than chunked)"
        case 505: "only HTTP/1.0 and HTTP/1.1 are served here"
        default: "the HTTP layer refused the request (status \(status)); nothing was done"
        }
        return error(status, message, closes: true)
    }

    /// A JSON-RPC response line, exactly as the control socket would write it. JSON-RPC
    /// errors are answers, not HTTP failures: status 200 unless the request could not be
    /// read at all (413 for an over-long body).
    public static func rpc(_ line: Data, status: Int = 200, closes: Bool = false) -> HTTPResponse {
        HTTPResponse(status: status, contentType: WebHeaders.json, body: line, closesConnection: closes, extraHeaders: [HTTPHeader("Cache-Control", "no-store")])
    }

    /// Any encodable value as a JSON body.
    public static func json(_ value: some Encodable, status: Int = 200) -> HTTPResponse {
        guard var body = try? ControlJSON.encoder().encode(value) else { return error(500, "the answer could not be encoded") }
        body.append(UInt8(ascii: "\n"))
        return HTTPResponse(status: status, contentType: WebHeaders.json, body: body, extraHeaders: [HTTPHeader("Cache-Control", "no-store")])
    }

    /// `POST /api/login`'s answer.
    public struct LoginResult: Codable, Hashable, Sendable {
        public var session: String

        public init(session: String) { self.session = session }
    }

    /// An app file. The type comes from the extension; unknown ones are served as bytes, and
    /// `nosniff` stops a browser from guessing otherwise. For `HEAD` the server sends the
    /// headers (and the length) of this same response without the body.
    public static func file(_ contents: Data, path: String) -> HTTPResponse {
        HTTPResponse(status: 200, contentType: contentType(forPath: path), body: contents, extraHeaders: [HTTPHeader("Cache-Control", "no-cache")])
    }

    static func contentType(forPath path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: ".") else { return "application/octet-stream" }
        switch name[name.index(after: dot)...].lowercased() {
        case "html": return "text/html; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "json", "map": return "application/json"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "ico": return "image/x-icon"
        case "woff2": return "font/woff2"
        case "txt": return "text/plain; charset=utf-8"
        default: return "application/octet-stream"
        }
    }

    /// `GET /` when no app is installed: a plain page saying so, never a stand-in app.
    public static func appNotInstalled(webRoot: String) -> HTTPResponse {
        let escaped = webRoot.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        let page = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>notesd: web app not installed</title></head>
            <body><h1>The notesd web app is not installed</h1>
            <p>notesd is running and its API answers here, but there is no <code>index.html</code> in
            <code>\(escaped)</code>. Install the web app there (<code>make install</code> does), or start
            notesd with <code>--web-root DIR</code> pointing at it.</p></body></html>

            """
        return HTTPResponse(status: 404, contentType: "text/html; charset=utf-8", body: Data(page.utf8), extraHeaders: [HTTPHeader("Cache-Control", "no-store")])
    }
}
