// discovery-probe — runs AvahiDiscovery and prints every event as one JSON object per line.
// A test tool for the netlab namespace tests (scripts/netlab exec LAB I discovery-probe …).
//
//   discovery-probe --id ID --port PORT [--name NAME] [--seconds N] [--churn N]
//
// --churn N first starts and stops discovery N times, each stop a few milliseconds after its
// start (while Avahi is calling back), to show that stopping mid-flight is safe.
//
// It exits after N seconds (default 60), when standard input reaches end of file, or on
// SIGTERM/SIGINT. It refuses to run unless DBUS_SYSTEM_BUS_ADDRESS is set, so that it never
// publishes through the machine's real system bus by accident.
import Discovery
import Dispatch
import Foundation
import Synchronization

/// One line of output. `ms` is the time since the probe started, for figures. `log` lines carry
/// AvahiDiscovery's diagnostics in `reason`.
struct ProbeLine: Encodable {
    var event: String
    var ms: Int
    var state: String?
    var name: String?
    var reason: String?
    var id: String?
    var v: Int?
    var host: String?
    var port: UInt16?
    var addresses: [String]?
}

struct Options {
    var deviceID = ""
    var port: UInt16 = 0
    var serviceName: String?
    var seconds = 60.0
    var churn = 0

    static let usage = "usage: discovery-probe --id ID --port PORT [--name NAME] [--seconds N] [--churn N]"

    init(parsing arguments: ArraySlice<String>) throws(ProbeUsageError) {
        var arguments = arguments
        while let flag = arguments.popFirst() {
            guard let value = arguments.popFirst() else { throw ProbeUsageError("\(flag) needs a value") }
            switch flag {
            case "--id": deviceID = value
            case "--port":
                guard let port = UInt16(value) else { throw ProbeUsageError("--port \(value) is not a port number") }
                self.port = port
            case "--name": serviceName = value
            case "--churn":
                guard let churn = Int(value), churn >= 0 else { throw ProbeUsageError("--churn \(value) is not a count") }
                self.churn = churn
            case "--seconds":
                guard let seconds = Double(value), seconds > 0 else { throw ProbeUsageError("--seconds \(value) is not positive") }
                self.seconds = seconds
            default: throw ProbeUsageError("unknown option \(flag)")
            }
        }
    }
}

struct ProbeUsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("discovery-probe: \(message)\n\(Options.usage)\n".utf8))
    exit(64)
}

let started = DispatchTime.now()
/// Lines come from the event queue and (log lines) from Avahi's thread: one writer at a time.
let output = Mutex(())

@Sendable func emit(_ line: ProbeLine) {
    var line = line
    line.ms = Int((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    guard let data = try? encoder.encode(line) else { return }
    output.withLock { _ in FileHandle.standardOutput.write(data + Data("\n".utf8)) }
}

@Sendable func describe(_ event: DiscoveryEvent) -> ProbeLine {
    switch event {
    case .state(let state):
        var line = ProbeLine(event: "state", ms: 0)
        switch state {
        case .disabled: line.state = "disabled"
        case .starting: line.state = "starting"
        case .running(let serviceName): (line.state, line.name) = ("running", serviceName)
        case .unavailable(let reason): (line.state, line.reason) = ("unavailable", reason)
        }
        return line
    case .found(let peer):
        return ProbeLine(event: "found", ms: 0, name: peer.serviceName, id: peer.deviceID, v: peer.protocolVersion,
                         host: peer.hostName, port: peer.port, addresses: peer.addresses.map(\.description))
    case .lost(let serviceName):
        return ProbeLine(event: "lost", ms: 0, name: serviceName)
    }
}

let options: Options
do {
    options = try Options(parsing: CommandLine.arguments.dropFirst())
} catch {
    fail(error.message)
}
guard let busAddress = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"], !busAddress.isEmpty else {
    fail("DBUS_SYSTEM_BUS_ADDRESS is not set; run me through scripts/netlab exec (I never use the machine's own bus)")
}
let advertisement: Advertisement
do {
    advertisement = try Advertisement(port: options.port, deviceID: options.deviceID, serviceName: options.serviceName)
} catch {
    fail(error.message)
}

let discovery = AvahiDiscovery(log: { message in emit(ProbeLine(event: "log", ms: 0, reason: message)) })
for cycle in 0..<options.churn {
    discovery.start(advertising: advertisement) { _ in }
    usleep(UInt32(1_000 * (cycle % 20)))
    discovery.stop()
}
if options.churn > 0 { emit(ProbeLine(event: "churned", ms: 0, reason: "\(options.churn) start/stop cycles")) }
discovery.start(advertising: advertisement) { event in emit(describe(event)) }

/// Stops discovery (freeing every Avahi object), says so, and exits.
@Sendable func finish(_ why: String) -> Never {
    discovery.stop()
    emit(ProbeLine(event: "stopped", ms: 0, reason: why))
    exit(0)
}

let signalSources = [SIGTERM, SIGINT].map { signalNumber in
    signal(signalNumber, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
    source.setEventHandler { finish("signal \(signalNumber)") }
    source.resume()
    return source
}
DispatchQueue.main.asyncAfter(deadline: .now() + options.seconds) { finish("\(options.seconds) seconds elapsed") }
Thread.detachNewThread {
    _ = FileHandle.standardInput.readDataToEndOfFile()
    DispatchQueue.main.async { finish("end of standard input") }
}
dispatchMain()
