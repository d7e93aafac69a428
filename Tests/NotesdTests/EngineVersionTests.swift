import Control
@testable import Engine
import EngineHarness
import Foundation
import Merge
import Peer
import Testing

/// Versions and features between devices of different releases (docs/protocol.md "Versions
/// and features"), on real engine cores in virtual time.
@Suite struct EngineVersionTests {
    /// Pairs bob with alice and waits until both sync sessions run.
    private func pairedHousehold(bobPayload: [UInt8]) throws -> TestHousehold {
        let home = try TestHousehold(["alice", "bob"])
        home["bob"].handshakePayload = bobPayload
        try home.pair(home["bob"], with: home["alice"])
        try home.wait("alice syncs with bob", on: home["alice"]) { $0.peerStatuses().contains { $0.name == "bob" && $0.connected } }
        return home
    }

    private func agreementWithBob(_ home: TestHousehold) throws -> PeerAgreement {
        let bob = home["bob"].identity.deviceID
        return try #require(try home.run(home["alice"]) { $0.agreement(with: bob) })
    }

    private func notesFlowBothWays(_ home: TestHousehold) throws {
        let (alice, bob) = (home["alice"], home["bob"])
        let fromAlice = try home.run(alice) { try $0.notesCreate(NoteCreateParams(title: "From Alice", html: "<p>to bob</p>")) }
        try home.wait("alice's note on bob", on: bob) { try $0.notesList(NotesListParams()).contains { $0.id == fromAlice.id } }
        let fromBob = try home.run(bob) { try $0.notesCreate(NoteCreateParams(title: "From Bob", html: "<p>to alice</p>")) }
        try home.wait("bob's note on alice", on: alice) { try $0.notesList(NotesListParams()).contains { $0.id == fromBob.id } }
    }

    @Test func twoDevicesOfThisReleaseShowEachOthersVersionAndKeepItWhileAway() throws {
        let home = try pairedHousehold(bobPayload: EngineCore.handshakePayload)
        let agreement = try agreementWithBob(home)
        #expect(agreement == PeerAgreement(peerSoftware: NotesVersion.string, protocolVersion: 1, features: EngineCore.knownFeatures))
        let alice = home["alice"]
        #expect(try home.run(alice) { try $0.status() }.peers.first { $0.name == "bob" }?.version == NotesVersion.string)
        let devices = try home.run(alice) { $0.deviceInfos() }
        #expect(devices.first { $0.name == "bob" }?.version == NotesVersion.string)
        #expect(devices.first { $0.isSelf }?.version == NotesVersion.string)

        // Bob goes away (and alice restarts): what bob runs is remembered.
        home.lan.stop(home["bob"])
        try home.wait("bob gone", on: alice) { !$0.peerStatuses().contains { $0.name == "bob" && $0.connected } }
        home.lan.stop(alice)
        try home.lan.launch(alice)
        #expect(try home.run(alice) { $0.peerStatuses() }.first { $0.name == "bob" }?.version == NotesVersion.string)
        #expect(try home.run(alice) { $0.deviceInfos() }.first { $0.name == "bob" }?.version == NotesVersion.string)
    }

    @Test func aDeviceThatAdvertisedNothingIsRelease01AndSyncsOnProtocol1() throws {
        let home = try pairedHousehold(bobPayload: [])
        #expect(try agreementWithBob(home) == .release01)
        let status = try #require(try home.run(home["alice"]) { $0.peerStatuses() }.first { $0.name == "bob" })
        #expect(status.version == "0.1 or earlier")
        #expect(try home.run(home["alice"]) { $0.deviceInfos() }.first { $0.name == "bob" }?.version == "0.1 or earlier")
        try notesFlowBothWays(home)
    }

    @Test func aNewerPeerWithAnUnknownFeatureAndAHigherProtocolIsSpokenProtocol1() throws {
        let newer = HandshakeInfo(software: "7.3.0", protocols: [1, 2, 9], features: ["teleport", "key-rotation-v9"])
        let home = try pairedHousehold(bobPayload: newer.encoded)
        let agreement = try agreementWithBob(home)
        #expect(agreement.protocolVersion == 1)
        #expect(agreement.features.isEmpty, "features this release does not know are ignored")
        #expect(agreement.peerSoftware == "7.3.0")
        #expect(try home.run(home["alice"]) { $0.peerStatuses() }.first { $0.name == "bob" }?.version == "7.3.0")
        try notesFlowBothWays(home)
    }

    @Test func aPeerWithNoProtocolInCommonIsRefusedAndStaysBlocked() throws {
        let home = try pairedHousehold(bobPayload: EngineCore.handshakePayload)
        let (alice, bob) = (home["alice"], home["bob"])
        // Bob comes back as a release that dropped protocol 1.
        home.lan.stop(bob)
        try home.wait("bob gone", on: alice) { !$0.peerStatuses().contains { $0.name == "bob" && $0.connected } }
        let tooNew = HandshakeInfo(software: "9.0.0", protocols: [2], features: [])
        bob.handshakePayload = tooNew.encoded
        try home.lan.launch(bob)
        // Bob dials alice (the address its join kept); each sees no protocol in common (alice
        // refuses, and bob agrees from what it says itself), and bob stops trying.
        let failures = [
            PeerAgreement.Failure.noCommonProtocol(local: [1], remote: [2], remoteSoftware: "9.0.0").description,
            PeerAgreement.Failure.noCommonProtocol(local: [2], remote: [1], remoteSoftware: NotesVersion.string).description,
        ]
        try home.wait("bob blocked for want of a common protocol", on: bob) { core in
            core.peerStatuses().contains { $0.status == .blocked && failures.contains($0.lastError ?? "") }
        }
        try home.lan.advance(by: 600_000)
        #expect(try !home.run(alice) { $0.peerStatuses() }.contains { $0.name == "bob" && $0.connected })
        #expect(try !home.run(bob) { $0.peerStatuses() }.contains { $0.connected })
    }

    @Test func aMalformedHandshakePayloadIsRefused() throws {
        let home = try pairedHousehold(bobPayload: EngineCore.handshakePayload)
        let (alice, bob) = (home["alice"], home["bob"])
        home.lan.stop(bob)
        try home.wait("bob gone", on: alice) { !$0.peerStatuses().contains { $0.name == "bob" && $0.connected } }
        bob.handshakePayload = [2, 0, 3, 0, 1, 0]  // protocols field of odd length
        try home.lan.launch(bob)
        var everConnected = false
        try home.lan.run(for: 120_000) {
            everConnected = everConnected || home["alice"].core!.peerStatuses().contains { $0.name == "bob" && $0.connected }
            return false
        }
        #expect(!everConnected, "alice refuses bob's connections while its payload is malformed")
        // Fixed, bob syncs again: the payload was the only thing wrong.
        home.lan.stop(bob)
        bob.handshakePayload = EngineCore.handshakePayload
        try home.lan.launch(bob)
        try home.wait("alice syncs with bob again", on: alice) { $0.peerStatuses().contains { $0.name == "bob" && $0.connected } }
    }
}
