import Foundation

/// A request id. JSON-RPC allows a number or a string; notesctl sends integers counting up
/// from 1 on each connection. The response carries the same id back, byte for byte.
public enum RequestID: Hashable, Sendable, Codable, CustomStringConvertible {
    case number(Int64)
    case string(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            self = .number(number)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        }
    }

    /// The id from an envelope's raw `id` member; `nil` when it is not an integer or string.
    init?(_ value: JSONValue) {
        switch value {
        case .int(let number): self = .number(number)
        case .string(let string): self = .string(string)
        case .null, .bool, .double, .array, .object: return nil
        }
    }

    public var description: String {
        switch self {
        case .number(let number): String(number)
        case .string(let string): "\"\(string)\""
        }
    }
}

/// Writing messages: every function returns one complete line (JSON plus `\n`).
/// docs/control-protocol.md, "Framing" and "Messages".
public enum ControlWire {
    public static let jsonrpc = "2.0"
    /// The notification method that carries `watch` events.
    public static let eventMethod = "event"

    private struct Request<Params: Encodable>: Encodable {
        let jsonrpc = ControlWire.jsonrpc
        let id: RequestID
        let method: String
        let params: Params
    }

    private struct Success<Value: Encodable>: Encodable {
        let jsonrpc = ControlWire.jsonrpc
        let id: RequestID
        let result: Value
    }

    private struct Failure: Encodable {
        let jsonrpc = ControlWire.jsonrpc
        let id: RequestID?
        let error: RPCError

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(jsonrpc, forKey: .jsonrpc)
            try container.encodeNullable(id, forKey: .id)  // JSON-RPC: `null` when unknown
            try container.encode(error, forKey: .error)
        }

        enum CodingKeys: String, CodingKey { case jsonrpc, id, error }
    }

    private struct Notification<Params: Encodable>: Encodable {
        let jsonrpc = ControlWire.jsonrpc
        let method: String
        let params: Params
    }

    /// A request for method `M`.
    public static func request<M: ControlMethod>(_ method: M.Type, id: RequestID, params: M.Params) throws -> Data {
        try line(Request(id: id, method: M.name, params: params))
    }

    /// The response to request `id`: the result, or the error. Never fails: a result that
    /// cannot be encoded, or whose line would exceed `maximumLineLength`, becomes an
    /// `internalError` response, so the client always gets an answer.
    public static func response<Value: Encodable>(
        id: RequestID, _ outcome: Result<Value, RPCError>,
        maximumLineLength: Int = LineFramer.defaultMaximumLineLength
    ) -> Data {
        switch outcome {
        case .success(let value):
            do {
                let data = try (value as? any DirectJSONEncodable).map { directLine(id: id, result: $0) } ?? line(Success(id: id, result: value))
                guard data.count - 1 <= maximumLineLength else {
                    return error(id: id, .answerTooLarge(bytes: data.count - 1, maximum: maximumLineLength))
                }
                return data
            } catch {
                return self.error(id: id, .internalError("the answer could not be encoded (\(error))"))
            }
        case .failure(let failure):
            return error(id: id, failure)
        }
    }

    /// An error response; `id` is `nil` when the request's id could not be read.
    public static func error(id: RequestID?, _ error: RPCError) -> Data {
        if let data = try? line(Failure(id: id, error: error)) { return data }
        // Only unencodable `data` (e.g. a NaN) can fail; the message alone always encodes.
        var plain = error
        plain.data = nil
        return (try? line(Failure(id: id, error: plain))) ?? Data()
    }

    /// A `watch` event notification.
    public static func event(_ event: ControlEvent) throws -> Data {
        try line(Notification(method: eventMethod, params: event))
    }

    /// `line(Success(…))` for a result that writes its own JSON: the same bytes, without
    /// `JSONEncoder` (docs/decisions.md, "Listing answers written directly").
    private static func directLine(id: RequestID, result: some DirectJSONEncodable) -> Data {
        // Small at first: a large result is written in parts, each sized from its estimate,
        // and appended here (growing a large buffer moves its pages rather than copying).
        var writer = JSONWriter(capacity: 4096)
        writer.raw("{")
        writer.key("id")
        switch id {
        case .number(let number): writer.integer(number)
        case .string(let text): writer.string(text)
        }
        writer.raw(",")
        writer.key("jsonrpc")
        writer.string(jsonrpc)
        writer.raw(",")
        writer.key("result")
        result.writeJSON(to: &writer)
        writer.raw("}\n")
        return writer.data()
    }

    private static func line(_ value: some Encodable) throws -> Data {
        var data = try ControlJSON.encoder().encode(value)
        data.append(UInt8(ascii: "\n"))
        return data
    }
}

/// A request line read by the server, checked against JSON-RPC's envelope rules; the
/// parameters are decoded later, once the server knows which type the method takes.
public struct IncomingRequest: Sendable {
    public let id: RequestID
    public let method: String
    /// The whole line, decoded a second time for the params: large bodies are parsed into
    /// their typed form once, never into an intermediate `JSONValue`.
    private let line: Data

    /// A line that is not a usable request, with the id to answer to (`nil` when unknown).
    public struct Rejection: Error, Hashable, Sendable {
        public let id: RequestID?
        public let error: RPCError

        /// The error response line to send back.
        public var responseLine: Data { ControlWire.error(id: id, error) }
    }

    private struct Header: Decodable {
        let jsonrpc: JSONValue?
        let id: JSONValue?
        let method: JSONValue?
    }

    private struct ParamsEnvelope<Params: Decodable>: Decodable {
        let params: Params?
    }

    /// Checks one line (without its `\n`): valid JSON (else `parseError`), an object with an
    /// integer or string `id`, `"jsonrpc": "2.0"` and a string `method` (else `invalidRequest`).
    /// Notifications from clients (no `id`) and batches (arrays) are not served.
    public static func parse(_ line: Data) -> Result<IncomingRequest, Rejection> {
        let decoder = ControlJSON.decoder()
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: line)
        } catch {
            if let value = try? decoder.decode(JSONValue.self, from: line) {
                let what = if case .array = value { "batches (arrays) are not supported, send one object per line" } else { "the line must be a JSON object" }
                return .failure(Rejection(id: nil, error: .invalidRequest(what)))
            }
            return .failure(Rejection(id: nil, error: .parseError(Self.describe(error))))
        }
        guard let rawID = header.id, let id = RequestID(rawID) else {
            return .failure(Rejection(id: nil, error: .invalidRequest("every request needs an \"id\" that is an integer or a string")))
        }
        guard header.jsonrpc == .string(ControlWire.jsonrpc) else {
            return .failure(Rejection(id: id, error: .invalidRequest("\"jsonrpc\" must be \"2.0\"")))
        }
        guard case .string(let method)? = header.method else {
            return .failure(Rejection(id: id, error: .invalidRequest("\"method\" must be a string")))
        }
        return .success(IncomingRequest(id: id, method: method, line: line))
    }

    /// The params as `Params`; absent or `null` params read as `{}`.
    /// Keys the type does not know are ignored.
    public func params<Params: Decodable>(_ type: Params.Type) throws(RPCError) -> Params {
        let decoder = ControlJSON.decoder()
        do {
            if let params = try decoder.decode(ParamsEnvelope<Params>.self, from: line).params { return params }
            return try decoder.decode(Params.self, from: Data("{}".utf8))
        } catch {
            throw RPCError.invalidParams(Self.describe(error))
        }
    }

    /// Decodes the params for `M`, runs `body`, and returns the response line. A thrown
    /// `RPCError` is sent as is; any other error becomes `internalError`.
    public func respond<M: ControlMethod>(to method: M.Type, _ body: (M.Params) throws -> M.Result) -> Data {
        ControlWire.response(id: id, Result { () throws(RPCError) -> M.Result in
            let params = try params(M.Params.self)
            do { return try body(params) } catch let error as RPCError { throw error } catch { throw .internalError(String(describing: error)) }
        })
    }

    /// `respond(to:_:)` for a handler that answers later (after a hop to another queue, or
    /// a wait): `start` gets the params and a completion to call once with the outcome;
    /// `reply` gets the response line. Params that do not decode are answered at once.
    public func respond<M: ControlMethod>(
        to method: M.Type, reply: @escaping @Sendable (Data) -> Void,
        _ start: (M.Params, _ complete: @escaping @Sendable (Result<M.Result, RPCError>) -> Void) -> Void
    ) {
        let params: M.Params
        do {
            params = try self.params(M.Params.self)
        } catch {
            return reply(ControlWire.error(id: id, error))
        }
        let id = id
        start(params) { outcome in reply(ControlWire.response(id: id, outcome)) }
    }

    /// A `DecodingError` as one phrase naming the offending key path, e.g.
    /// `params.title: expected String, found a number`.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return String(describing: error) }
        func path(_ keys: [any CodingKey]) -> String {
            let names = keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return names.isEmpty ? "the value" : names.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is required"
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)) must be \(Self.jsonName(of: type))"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)) must be \(Self.jsonName(of: type)), not null"
        case .dataCorrupted(let context):
            let underlying = (context.underlyingError as? NSError)?.userInfo[NSDebugDescriptionErrorKey] as? String
            return context.codingPath.isEmpty
                ? (underlying ?? context.debugDescription)
                : "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return String(describing: error)
        }
    }

    private static func jsonName(of type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt64.Type, is Double.Type: "a number"
        case is [Any].Type: "an array"
        case is [String: Any].Type: "an object"
        default: "a \(type)"
        }
    }
}

/// A line read by the client: a response to one of its requests, or a notification.
public enum IncomingMessage: Sendable {
    /// A response; `id` is `nil` when the server could not read the request's id.
    case response(id: RequestID?, Response)
    /// A notification (no id), e.g. a `watch` event.
    case notification(method: String, line: Data)

    public enum Response: Sendable {
        /// A result; decode it with `IncomingMessage.result(_:from:)`.
        case result(line: Data)
        case error(RPCError)
    }

    /// The members that tell the kinds apart; `result` is only checked for presence, so a
    /// large result is parsed once, into its typed form.
    private struct Header: Decodable {
        let id: RequestID?
        let method: String?
        let error: RPCError?
        let hasResult: Bool

        enum CodingKeys: String, CodingKey { case id, method, error, result }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decodeIfPresent(RequestID.self, forKey: .id)
            method = try container.decodeIfPresent(String.self, forKey: .method)
            error = try container.decodeIfPresent(RPCError.self, forKey: .error)
            hasResult = container.contains(.result)
        }
    }

    private struct ResultEnvelope<Value: Decodable>: Decodable {
        let result: Value
    }

    private struct ParamsEnvelope<Params: Decodable>: Decodable {
        let params: Params
    }

    /// Reads one line from the server. A line that is none of the three shapes is a
    /// protocol violation, described in the thrown error's message.
    public static func parse(_ line: Data) throws(ProtocolViolation) -> IncomingMessage {
        let header: Header
        do {
            header = try ControlJSON.decoder().decode(Header.self, from: line)
        } catch {
            throw ProtocolViolation("the daemon sent a line that is not a JSON-RPC message (\(IncomingRequest.describe(error)))")
        }
        if let error = header.error { return .response(id: header.id, .error(error)) }
        if header.hasResult, let id = header.id { return .response(id: id, .result(line: line)) }
        if let method = header.method, header.id == nil { return .notification(method: method, line: line) }
        throw ProtocolViolation("the daemon sent a message with neither a result, an error nor a method")
    }

    /// The `result` of a response line as `Value`.
    public static func result<Value: Decodable>(_ type: Value.Type, from line: Data) throws(ProtocolViolation) -> Value {
        do {
            return try ControlJSON.decoder().decode(ResultEnvelope<Value>.self, from: line).result
        } catch {
            throw ProtocolViolation("the daemon's answer has an unexpected shape (\(IncomingRequest.describe(error)))")
        }
    }

    /// The `params` of a notification line as `Params`.
    public static func params<Params: Decodable>(_ type: Params.Type, from line: Data) throws(ProtocolViolation) -> Params {
        do {
            return try ControlJSON.decoder().decode(ParamsEnvelope<Params>.self, from: line).params
        } catch {
            throw ProtocolViolation("the daemon sent a notification with an unexpected shape (\(IncomingRequest.describe(error)))")
        }
    }
}

/// The peer broke the protocol (bad JSON, unexpected shape, over-long line).
public struct ProtocolViolation: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
