import Control
import Foundation

/// The responses the server builds, so every one carries the same headers and its errors
/// the same JSON shape: `{"error": {"status": 401, "message": "…"}}`.
public enum WebResponses {
    private struct ErrorBody: Encodable {
        struct Detail: Encodable {
            let status: Int
            let message: String
        }
        let error: Detail
    }

    /// An HTTP-level error (before or outside JSON-RPC) with a message saying what to do.
    public static func error(_ status: Int, _ message: String, closes: Bool = false, extraHeaders: [HTTPHeader] = []) -> HTTPResponse {
        let body = (try? ControlJSON.encoder().encode(ErrorBody(error: .init(status: status, message: message)))) ?? Data()
        return HTTPResponse(
            status: status, contentType: WebHeaders.json, body: body + Data("\n".utf8), closesConnection: closes,
            extraHeaders: [HTTPHeader("Cache-Control", "no-store")] + extraHeaders)
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
