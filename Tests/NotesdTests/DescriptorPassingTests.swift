#if canImport(Glibc)
import Glibc
#endif
import Control
import Foundation
import Testing
@testable import notesd
import TestSupport

/// A descriptor sent with a request line (`SCM_RIGHTS`) reaches that request's handler and
/// only that one (docs/control-protocol.md, `backup`).
@Suite struct DescriptorPassingTests {
    @Test func aPassedDescriptorReachesItsRequestAndNoOther() async throws {
        let server = try TestServer()
        let client = try server.client()
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }
        let answers = try await blocking {
            let line = #"{"jsonrpc":"2.0","id":1,"method":"echo.toPassed","params":{"text":"through the socket"}}"# + "\n"
            try client.socket.send(Data(line.utf8), passing: writeEnd)
            close(writeEnd)
            let first = try client.readMessage()
            try client.request(id: 2, "echo.toPassed", params: #"{"text":"again"}"#)
            return [first, try client.readMessage()]
        }
        #expect(try ControlServerTests.text(of: answers[0]) == "written")
        #expect(try ControlServerTests.text(of: answers[1]) == "no descriptor")
        // The server closed its copy once the handler let go: the pipe reaches end of file.
        var buffer = [UInt8](repeating: 0, count: 64)
        var received: [UInt8] = []
        while true {
            var ready = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 10_000) == 1 else {
                Issue.record("the server still holds the passed descriptor")
                break
            }
            let count = read(readEnd, &buffer, buffer.count)
            if count <= 0 { break }
            received += buffer[..<count]
        }
        #expect(String(decoding: received, as: UTF8.self) == "through the socket")
    }
}
