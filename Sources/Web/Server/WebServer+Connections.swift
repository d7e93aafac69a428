#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CMicroHTTPD
import Control
import Foundation
import Synchronization

/// One request on one connection, from its head to its response. The MHD thread alone
/// touches the unlocked members (libmicrohttpd calls a connection's callbacks on its polling
/// thread, one at a time); what other threads hand over (the RPC answer) goes through
/// `shared`. Hence `@unchecked Sendable`.
final class RequestState: @unchecked Sendable {
    let head: HTTPRequestHead
    let bodyLimit: Int
    let connection: OpaquePointer
    var body = Data()
    /// The body grew past `bodyLimit`: the rest is read and dropped, then refused with 413.
    var refused = false
    /// Bytes dropped since then.
    var dropped = 0
    /// The action ran; the next call takes the answer.
    var started = false
    var stream: EventStream?
    private let shared = Mutex(Shared())

    private struct Shared {
        var response: HTTPResponse?
        var suspended = false
        var closed = false
    }

    init(head: HTTPRequestHead, bodyLimit: Int, connection: OpaquePointer) {
        self.head = head
        self.bodyLimit = bodyLimit
        self.connection = connection
    }

    var isClosed: Bool { shared.withLock { $0.closed } }

    /// Parks the connection until `finish`. Called on the MHD thread, from the handler.
    func suspend() {
        shared.withLock { shared in
            shared.suspended = true
            MHD_suspend_connection(connection)
        }
    }

    /// Hands over the answer (the first one wins) and resumes the connection, from any thread.
    func finish(with response: HTTPResponse) {
        shared.withLock { shared in
            guard !shared.closed, shared.response == nil else { return }
            shared.response = response
            if shared.suspended {
                shared.suspended = false
                MHD_resume_connection(connection)
            }
        }
    }

    func takeResponse() -> HTTPResponse? {
        shared.withLock { shared in
            defer { shared.response = nil }
            return shared.response
        }
    }

    func markClosed() {
        shared.withLock { $0.closed = true }
    }
}

extension WebServer {
    static let accessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, uploadData, uploadSize, requestContext in
        guard let context, let connection, let requestContext, let uploadSize else { return notesd_mhd_no() }
        let server = Unmanaged<WebServer>.fromOpaque(context).takeUnretainedValue()
        guard let raw = requestContext.pointee else {
            return server.begin(connection, url: url.map { String(cString: $0) } ?? "", method: method.map { String(cString: $0) } ?? "", requestContext: requestContext)
        }
        let request = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            uploadSize.pointee = 0
            if request.refused {
                // libmicrohttpd 0.9.75 queues an answer only once the whole request is in, and
                // closing on a client still sending makes the kernel reset the connection, so
                // the client would never read the 413: drop the rest, up to a bound.
                request.dropped += count
                return request.dropped <= max(request.bodyLimit, 1 << 20) ? notesd_mhd_yes() : notesd_mhd_no()
            }
            guard request.body.count + count <= request.bodyLimit, let uploadData else {
                request.refused = true
                request.dropped = count
                request.body = Data()
                return notesd_mhd_yes()
            }
            request.body.append(UnsafeRawPointer(uploadData).assumingMemoryBound(to: UInt8.self), count: count)
            return notesd_mhd_yes()
        }
        if request.refused {
            // The oversized body (chunked: its length was not known up front) is all in.
            guard !request.started else { return notesd_mhd_no() }
            request.started = true
            return server.queue(server.router.oversized(request.head), on: connection)
        }
        if !request.started {
            request.started = true
            return server.perform(request)
        }
        // Resumed: the answer is in.
        guard let response = request.takeResponse() else { return notesd_mhd_no() }
        return server.queue(response, on: connection)
    }

    static let completed: MHD_RequestCompletedCallback = { context, connection, requestContext, termination in
        guard let context else { return }
        let server = Unmanaged<WebServer>.fromOpaque(context).takeUnretainedValue()
        // Answered in full: a kept-alive connection now awaits its next request. (Any other
        // ending closes the connection.)
        if let connection, termination == .REQUEST_TERMINATED_COMPLETED_OK { server.deadlines.awaitNext(connection) }
        guard let requestContext, let raw = requestContext.pointee else { return }
        requestContext.pointee = nil
        let request = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
        request.markClosed()
        server.parked.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(request)) }
        if let stream = request.stream {
            // The connection is gone: never resume it again.
            stream.detach()
            server.events.close(stream)
        }
    }

    /// A connection opened or is closing (`MHD_OPTION_NOTIFY_CONNECTION`): the request
    /// deadline's clock, and the socket context by which `replacer` finds this server.
    static let connectionNotice: MHD_NotifyConnectionCallback = { context, connection, socketContext, event in
        guard let context, let connection else { return }
        let server = Unmanaged<WebServer>.fromOpaque(context).takeUnretainedValue()
        switch event {
        case .CONNECTION_NOTIFY_STARTED:
            socketContext?.pointee = context
            server.deadlines.opened(connection, socket: notesd_mhd_connection_fd(connection))
        case .CONNECTION_NOTIFY_CLOSED:
            server.deadlines.closed(connection)
            socketContext?.pointee = nil
        default:
            break
        }
    }

    /// Installs `replacer` for the process, once (every server shares the one hook).
    static let installReplacer: Void = notesd_mhd_set_replacer(replacer)

    /// libmicrohttpd queued an answer of its own (include/shim.h): send ours instead — the
    /// same status, our JSON error and every security header — and stop the request clock.
    static let replacer: notesd_mhd_replacer = { connection, status, original in
        guard let connection else { return nil }
        if let context = notesd_mhd_socket_context(connection) {
            let server = Unmanaged<WebServer>.fromOpaque(context).takeUnretainedValue()
            server.deadlines.settled(connection)
            server.log("libmicrohttpd refused a request with \(status); answered with notesd's headers")
        }
        guard status >= 400 else {
            // Not an error page (0.9.75 writes none on its own): keep it, with our headers.
            if let original { for header in WebHeaders.common { _ = MHD_add_response_header(original, header.name, header.value) } }
            return nil
        }
        return makeResponse(WebResponses.libraryError(status: Int(status)))
    }

    /// The head is complete: check it, then read the body (or refuse at once).
    private func begin(_ connection: OpaquePointer, url: String, method: String, requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        let head = HTTPRequestHead(method: method, path: url, headers: Self.headers(of: connection))
        switch router.admit(head, isSession: authority.isSession) {
        case .refuse(let response):
            return queue(response, on: connection)
        case .readBody(let limit):
            if let length = head.values("Content-Length").first.flatMap({ Int($0) }), length > limit {
                return queue(router.oversized(head), on: connection)
            }
            let request = RequestState(head: head, bodyLimit: limit, connection: connection)
            requestContext.pointee = Unmanaged.passRetained(request).toOpaque()
            return notesd_mhd_yes()
        }
    }

    /// The whole request is in: route it and act.
    private func perform(_ request: RequestState) -> MHD_Result {
        let connection = request.connection
        // In whole: whatever the answer waits for (the engine, events) is not the client.
        // If the deadline won the race, the client was told 408: do nothing it did not see.
        guard deadlines.settled(connection) else { return notesd_mhd_no() }
        switch router.route(HTTPRequest(head: request.head, body: request.body), isSession: authority.isSession) {
        case .respond(let response):
            return queue(response, on: connection)
        case .login(let token):
            guard let session = authority.redeem(token: token) else {
                return queue(WebResponses.error(401, "that login link is unknown, used or expired (links work once, for 2 minutes); run notesctl ui again"), on: connection)
            }
            return queue(WebResponses.json(WebResponses.LoginResult(session: session)), on: connection)
        case .file(let path, _):
            return queue(file(path), on: connection)
        case .rpc(let incoming, _):
            request.body = Data()
            parked.withLock { $0[ObjectIdentifier(request)] = request }
            request.suspend()
            dispatch(incoming, { [weak self, request] line in
                request.finish(with: WebResponses.rpc(line))
                self?.parked.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(request)) }
            })
            return notesd_mhd_yes()
        case .events(let lastEventID, _):
            guard let stream = events.open(lastEventID: lastEventID) else {
                return queue(WebResponses.error(503, "too many event streams are open (at most \(events.limits.maximumStreams)); close some tabs"), on: connection)
            }
            request.stream = stream
            return queueStream(stream, on: connection)
        }
    }

    private func file(_ path: String) -> HTTPResponse {
        let full = webRoot.hasSuffix("/") ? webRoot + path : webRoot + "/" + path
        var info = stat()
        guard stat(full, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            if path == "index.html" { return WebResponses.appNotInstalled(webRoot: webRoot) }
            return WebResponses.error(404, "no file /\(path) in the web app")
        }
        guard info.st_size <= limits.maximumFileBytes, let contents = FileManager.default.contents(atPath: full) else {
            return WebResponses.error(500, "cannot read /\(path) from the web root \(webRoot)")
        }
        return WebResponses.file(contents, path: path)
    }

    /// Every request header, in order.
    private static func headers(of connection: OpaquePointer) -> [HTTPHeader] {
        var headers: [HTTPHeader] = []
        withUnsafeMutablePointer(to: &headers) { pointer in
            _ = MHD_get_connection_values(connection, .HEADER_KIND, { context, _, key, value in
                guard let context, let key else { return notesd_mhd_yes() }
                let list = context.assumingMemoryBound(to: [HTTPHeader].self)
                list.pointee.append(HTTPHeader(String(cString: key), value.map { String(cString: $0) } ?? ""))
                return notesd_mhd_yes()
            }, pointer)
        }
        return headers
    }

    func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        deadlines.settled(connection)
        guard let created = Self.makeResponse(response) else { return notesd_mhd_no() }
        defer { MHD_destroy_response(created) }
        return MHD_queue_response(connection, UInt32(response.status), created)
    }

    /// Bodies at least this large are lent to libmicrohttpd in place, not copied: a listing of
    /// every note is megabytes, and a copy was a tenth of its cost (page faults included).
    static let bodyLentInPlaceBytes = 64 * 1024

    /// A libmicrohttpd response for `response` (a copy of a small body, a large one lent);
    /// the caller destroys it.
    static func makeResponse(_ response: HTTPResponse) -> OpaquePointer? {
        let created: OpaquePointer?
        if response.body.count >= bodyLentInPlaceBytes {
            let lent = LentBody(response.body)
            let retained = Unmanaged.passRetained(lent)
            created = MHD_create_response_from_buffer_with_free_callback_cls(lent.count, lent.start, { context in
                guard let context else { return }
                Unmanaged<LentBody>.fromOpaque(context).release()
            }, retained.toOpaque())
            if created == nil { retained.release() }
        } else {
            created = response.body.withUnsafeBytes { bytes in
                MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
            }
        }
        guard let created else { return nil }
        addHeaders(response, to: created)
        return created
    }

    private static func addHeaders(_ response: HTTPResponse, to created: OpaquePointer) {
        for header in response.headers { _ = MHD_add_response_header(created, header.name, header.value) }
        if response.closesConnection { _ = MHD_add_response_header(created, "Connection", "close") }
    }

    /// An event stream: chunked, read from the `EventStream`; parked while nothing waits.
    private func queueStream(_ stream: EventStream, on connection: OpaquePointer) -> MHD_Result {
        deadlines.settled(connection)
        let handle = DaemonHandle(pointer: connection)
        stream.setWake { MHD_resume_connection(handle.pointer) }
        let retained = Unmanaged.passRetained(StreamReader(stream: stream, connection: handle))
        guard let created = MHD_create_response_from_callback(notesd_mhd_size_unknown(), 4096, { context, _, buffer, capacity in
            guard let context, let buffer else { return notesd_mhd_reader_end_with_error() }
            let reader = Unmanaged<StreamReader>.fromOpaque(context).takeUnretainedValue()
            switch reader.stream.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: capacity), park: { MHD_suspend_connection(reader.connection.pointer) }) {
            case .bytes(let count): return count
            case .parked: return 0
            case .ended: return notesd_mhd_reader_end_of_stream()
            }
        }, retained.toOpaque(), { context in
            guard let context else { return }
            Unmanaged<StreamReader>.fromOpaque(context).release()
        }) else {
            retained.release()
            return notesd_mhd_no()
        }
        defer { MHD_destroy_response(created) }
        Self.addHeaders(HTTPResponse(status: 200, contentType: WebHeaders.eventStream, body: Data(), extraHeaders: [HTTPHeader("Cache-Control", "no-store")]), to: created)
        return MHD_queue_response(connection, 200, created)
    }
}

/// A response body libmicrohttpd reads in place until it frees the response (which releases
/// this). Sound because a body this large keeps its bytes in a heap storage object, which
/// this keeps alive and nothing mutates: the address taken at the start stays valid.
final class LentBody: Sendable {
    private let body: Data
    let count: Int
    nonisolated(unsafe) let start: UnsafeMutableRawPointer?

    init(_ body: Data) {
        precondition(body.count >= WebServer.bodyLentInPlaceBytes, "only a body stored on the heap can be lent in place")
        self.body = body
        count = body.count
        start = body.withUnsafeBytes { UnsafeMutableRawPointer(mutating: $0.baseAddress) }
    }
}

/// What an event stream's content reader needs: the stream and its connection (to park it).
final class StreamReader: Sendable {
    let stream: EventStream
    let connection: WebServer.DaemonHandle

    init(stream: EventStream, connection: WebServer.DaemonHandle) {
        self.stream = stream
        self.connection = connection
    }
}

extension HTTPResponse {
    /// The response as HTTP/1.1 bytes, for the one answer written without libmicrohttpd: the
    /// 408 of a request that missed its deadline (`RequestDeadlines`).
    func wireBytes() -> Data {
        let reason = switch status {
        case 408: "Request Timeout"
        default: "Error"
        }
        var text = "HTTP/1.1 \(status) \(reason)\r\n"
        for header in headers { text += "\(header.name): \(header.value)\r\n" }
        text += "Content-Length: \(body.count)\r\n"
        if closesConnection { text += "Connection: close\r\n" }
        return Data((text + "\r\n").utf8) + body
    }
}
