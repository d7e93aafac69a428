import Control
@testable import Engine
import Foundation
import Merge
import Peer
import Synchronization
import Testing
@testable import notesd
import TestSupport

/// An engine on loopback with its own data directory, driven the way the control handler does.
final class TestDevice {
    let directory: TemporaryDirectory
    let engine: EngineShell

    init(name: String, peers: [String] = []) throws {
        directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.path + "/notes.db")
        let identity = try Peer.DeviceIdentity.loadOrCreate(inDirectory: directory.path)
        let household = try HouseholdKey(directory: directory.path)
        let settings = EngineShell.Settings(
            core: EngineCore.Settings(dataDirectory: directory.path, deviceName: name, controlSocket: directory.path + "/control.sock"),
            listen: PeerAddress(host: "127.0.0.1", port: 0), staticPeers: peers)
        engine = try EngineShell(settings: settings, replica: replica, identity: identity, household: household, log: .silent)
        try engine.start()
    }

    deinit { engine.queue.sync { engine.stop() } }

    var address: String { engine.queue.sync { engine.core.listenAddresses[0].description } }

    func run<T>(_ body: (EngineCore) throws -> T) rethrows -> T { try engine.queue.sync { try engine.request(body) } }

    /// Runs an engine operation that answers through a completion, and waits for it.
    func await<T: Sendable>(_ start: (EngineShell, @escaping @Sendable (Result<T, RPCError>) -> Void) -> Void) throws -> T {
        let box = Mutex<Result<T, RPCError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        engine.queue.sync {
            start(engine) { result in
                box.withLock { $0 = result }
                done.signal()
            }
        }
        guard done.wait(timeout: .now() + 60) == .success else { throw RPCError.internalError("no answer within 60 s") }
        return try box.withLock { $0! }.get()
    }

    /// Waits (bounded) until `condition` holds on the engine's queue.
    func wait(seconds: Double = 20, _ what: String, until condition: (EngineCore) throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try run(condition) { return }
            usleep(10_000)
        }
        Issue.record("timed out waiting for: \(what)")
        throw RPCError.timeout("waiting for \(what)", data: EmptyParams())
    }
}

/// The parked control requests, as the control handler starts them.
extension EngineShell {
    func startJoin(_ params: JoinParams, complete: @escaping @Sendable (Result<JoinResult, RPCError>) -> Void) {
        let token = park(complete) { if case .join(let result) = $0 { result } else { nil } }
        request { $0.startJoin(params, token: token) }
    }

    func startConnect(_ params: ConnectParams, complete: @escaping @Sendable (Result<PeerStatus, RPCError>) -> Void) {
        let token = park(complete) { if case .connect(let result) = $0 { result } else { nil } }
        request { $0.startConnect(params, token: token) }
    }

    func startSync(_ params: SyncParams, complete: @escaping @Sendable (Result<SyncResult, RPCError>) -> Void) {
        let token = park(complete) { if case .sync(let result) = $0 { result } else { nil } }
        request { $0.startSync(params, token: token) }
    }
}

@Suite(.serialized) struct EngineTests {
    @Test func pairingThroughInviteAndJoinThenNotesFlowBothWays() async throws {
        try await offThePool { try self.blockingPairingThroughInviteAndJoinThenNotesFlowBothWays() }
    }

    func blockingPairingThroughInviteAndJoinThenNotesFlowBothWays() throws {
        let alice = try TestDevice(name: "alice")
        let bob = try TestDevice(name: "bob")
        let code = try alice.run { try $0.invite().code }
        let joined = try bob.await { engine, done in engine.startJoin(JoinParams(code: code, address: alice.address), complete: done) }
        #expect(joined.devices.map(\.name).sorted() == ["alice", "bob"])
        #expect(bob.run { $0.household.key } == alice.run { $0.household.key })

        let note = try alice.run { try $0.notesCreate(NoteCreateParams(title: "From Alice", html: "<p>hello bob</p>")) }
        try bob.wait("alice's note on bob") { engine in try engine.notesList(NotesListParams()).contains { $0.id == note.id } }
        let reply = try bob.run { try $0.notesCreate(NoteCreateParams(title: "From Bob", html: "<p>hi alice</p>")) }
        try alice.wait("bob's note on alice") { engine in try engine.notesList(NotesListParams()).contains { $0.id == reply.id } }
        // Both see each other as connected roster members.
        #expect(alice.run { $0.deviceInfos() }.contains { $0.name == "bob" && $0.connected })
    }

    @Test func aPeerThatIsAwayShowsWhatIsWaitingForIt() async throws {
        try await offThePool { try self.blockingAPeerThatIsAwayShowsWhatIsWaitingForIt() }
    }

    func blockingAPeerThatIsAwayShowsWhatIsWaitingForIt() throws {
        let alice = try TestDevice(name: "alice")
        var bob: TestDevice? = try TestDevice(name: "bob")
        let code = try alice.run { try $0.invite().code }
        _ = try bob!.await { engine, done in engine.startJoin(JoinParams(code: code, address: alice.address), complete: done) }
        for index in 0..<5 { _ = try alice.run { try $0.notesCreate(NoteCreateParams(title: "Before \(index)", html: "<p>x</p>")) } }
        try bob!.wait("bob holds alice's notes") { try $0.replica.noteCount == 5 }
        try alice.wait("alice sees bob caught up") { engine in engine.peerStatuses().contains { $0.name == "bob" && $0.status == .idle } }

        bob = nil
        try alice.wait("bob gone") { engine in engine.peerStatuses().contains { $0.name == "bob" && !$0.connected } }
        // What bob already holds is not counted again.
        #expect(alice.run { $0.peerStatuses() }.first { $0.name == "bob" }?.entriesBehind == 0)
        for index in 0..<3 { _ = try alice.run { try $0.notesCreate(NoteCreateParams(title: "While away \(index)", html: "<p>y</p>")) } }
        let away = try #require(alice.run { $0.peerStatuses() }.first { $0.name == "bob" })
        #expect(away.status == .offline)
        #expect(away.address == nil, "bob only ever dialled alice: his source port is no address to dial")
        #expect(away.entriesBehind == 3, "three new notes wait for bob")
    }

    @Test func aReusedInviteCodeIsRefusedClearly() async throws {
        try await offThePool { try self.blockingAReusedInviteCodeIsRefusedClearly() }
    }

    func blockingAReusedInviteCodeIsRefusedClearly() throws {
        let alice = try TestDevice(name: "alice")
        let bob = try TestDevice(name: "bob")
        let carol = try TestDevice(name: "carol")
        let code = try alice.run { try $0.invite().code }
        _ = try bob.await { engine, done in engine.startJoin(JoinParams(code: code, address: alice.address), complete: done) }
        #expect {
            _ = try carol.await { engine, done in engine.startJoin(JoinParams(code: code, address: alice.address), complete: done) }
        } throws: { error in
            (error as? RPCError)?.code == .inviteUsed && (error as? RPCError)?.message.contains("already used") == true
        }
    }

    @Test func aWrongInviteCodeFailsWithPairingFailed() async throws {
        try await offThePool { try self.blockingAWrongInviteCodeFailsWithPairingFailed() }
    }

    func blockingAWrongInviteCodeFailsWithPairingFailed() throws {
        let alice = try TestDevice(name: "alice")
        let bob = try TestDevice(name: "bob")
        let wrong = InviteCode.generate().description
        #expect {
            _ = try bob.await { engine, done in engine.startJoin(JoinParams(code: wrong, address: alice.address), complete: done) }
        } throws: { error in
            (error as? RPCError)?.code == .pairingFailed
        }
        #expect {
            _ = try bob.await { engine, done in engine.startJoin(JoinParams(code: "not-a-code", address: alice.address), complete: done) }
        } throws: { error in
            (error as? RPCError)?.code == .inviteInvalid
        }
    }

    @Test func aDeviceNotOnTheRosterIsRefusedAndBlocked() async throws {
        try await offThePool { try self.blockingADeviceNotOnTheRosterIsRefusedAndBlocked() }
    }

    func blockingADeviceNotOnTheRosterIsRefusedAndBlocked() throws {
        let alice = try TestDevice(name: "alice")
        let stranger = try TestDevice(name: "stranger")
        // Same household key, but never admitted to the roster.
        try stranger.run { try $0.household.replace(with: alice.run { $0.household.key }) }
        #expect {
            _ = try stranger.await { engine, done in engine.startConnect(ConnectParams(address: alice.address), complete: done) }
        } throws: { error in
            (error as? RPCError)?.code == .pairingFailed
        }
    }
}

@Suite(.serialized) struct RevocationTests {
    @Test func aRemovedDeviceIsRefusedSaysSoAndCanBeInvitedBack() async throws {
        try await offThePool { try self.blockingARemovedDeviceIsRefusedSaysSoAndCanBeInvitedBack() }
    }

    func blockingARemovedDeviceIsRefusedSaysSoAndCanBeInvitedBack() throws {
        let alice = try TestDevice(name: "alice")
        let bob = try TestDevice(name: "bob")
        let code = try alice.run { try $0.invite().code }
        _ = try bob.await { engine, done in engine.startJoin(JoinParams(code: code, address: alice.address), complete: done) }
        try alice.wait("bob connected") { engine in engine.deviceInfos().contains { $0.name == "bob" && $0.connected } }
        let bobID = try alice.run { engine in try #require(engine.deviceInfos().first { $0.name == "bob" }?.id) }
        // Unknown names and ids are refused; a name matches in any case, like an id prefix.
        #expect { _ = try alice.run { try $0.devicesRemove(DeviceRemoveParams(device: "carol")) } } throws: { ($0 as? RPCError)?.code == .notFound }
        #expect(alice.run { $0.deviceInfos() }.contains { $0.name == "bob" && !$0.revoked })
        let removed = try alice.run { try $0.devicesRemove(DeviceRemoveParams(device: "BOB")) }
        #expect(removed.revoked && removed.id == bobID)
        let again = try alice.run { try $0.devicesRemove(DeviceRemoveParams(device: String(bobID.prefix(10)))) }
        #expect(again.id == bobID && again.revoked, "idempotent, by id prefix")
        try alice.wait("bob disconnected") { engine in !engine.deviceInfos().contains { $0.name == "bob" && $0.connected } }

        // Bob learns it from alice's refusal, remembers it, and says so.
        try bob.wait("bob knows he was removed") { $0.removedFromHousehold != nil }
        #expect(try bob.run { try $0.replica.removedFromHousehold } != nil, "kept across restarts")
        #expect(try bob.run { try $0.status() }.household == nil)
        #expect { _ = try bob.run { try $0.invite() } } throws: { ($0 as? RPCError)?.code == .notInHousehold }
        #expect {
            _ = try bob.await { engine, done in engine.startSync(SyncParams(wait: false), complete: done) }
        } throws: { ($0 as? RPCError)?.code == .notInHousehold }
        #expect {
            _ = try bob.await { engine, done in engine.startConnect(ConnectParams(address: alice.address), complete: done) }
        } throws: { ($0 as? RPCError)?.code == .notInHousehold }
        try bob.wait("bob sees alice refuse him") { engine in
            engine.peerStatuses().contains { $0.status == .blocked && ($0.lastError ?? "").contains("removed") }
        }
        #expect(!alice.run { $0.deviceInfos() }.contains { $0.name == "bob" && $0.connected })

        // A new invite takes him back: the join is allowed, the roster un-revokes him, notes flow.
        let second = try alice.run { try $0.invite().code }
        let rejoined = try bob.await { engine, done in engine.startJoin(JoinParams(code: second, address: alice.address), complete: done) }
        #expect(rejoined.household.deviceCount == 2, "bob counts himself before alice's roster says so again")
        #expect(bob.run { $0.removedFromHousehold } == nil)
        #expect(try bob.run { try $0.status() }.household != nil)
        #expect(alice.run { $0.deviceInfos() }.contains { $0.name == "bob" && !$0.revoked })
        let note = try bob.run { try $0.notesCreate(NoteCreateParams(title: "Back", html: "<p>bob is back</p>")) }
        try alice.wait("bob's note on alice") { engine in try engine.notesList(NotesListParams()).contains { $0.id == note.id } }

        // Removing this device itself is refused.
        let selfID = alice.run { $0.identity.deviceID.description }
        #expect(throws: RPCError.self) { try alice.run { try $0.devicesRemove(DeviceRemoveParams(device: selfID)) } }
    }
}

@Suite(.serialized) struct DeviceReferenceTests {
    @Test func aNameThatSpellsTheStartOfAnotherDevicesIDIsAmbiguous() async throws {
        try await offThePool { try self.blockingANameThatSpellsTheStartOfAnotherDevicesIDIsAmbiguous() }
    }

    func blockingANameThatSpellsTheStartOfAnotherDevicesIDIsAmbiguous() throws {
        let alice = try TestDevice(name: "alice")
        let bob = try TestDevice(name: "bob")
        let bobID = bob.run { $0.identity.deviceID.description }
        // carol's name is the first three characters of bob's id.
        let carol = try TestDevice(name: String(bobID.prefix(3)).lowercased())
        for device in [bob, carol] {
            let code = try alice.run { try $0.invite().code }
            _ = try device.await { engine, done in engine.startJoin(JoinParams(code: code, address: alice.address), complete: done) }
        }
        #expect {
            _ = try alice.run { try $0.devicesRemove(DeviceRemoveParams(device: String(bobID.prefix(3)))) }
        } throws: { ($0 as? RPCError)?.code == .ambiguousReference }
        #expect(alice.run { $0.deviceInfos() }.allSatisfy { !$0.revoked }, "nobody was removed")
    }
}

@Suite struct EventTitleTests {
    @Test func longTitlesAreCutSoOneEventCannotOverflowAWatcher() {
        #expect(EngineCore.eventTitle("Groceries") == "Groceries")
        let long = EngineCore.eventTitle(String(repeating: "é", count: 2_000_000))
        #expect(long.count == 1_000)
        #expect(long.hasSuffix("…"))
    }
}
