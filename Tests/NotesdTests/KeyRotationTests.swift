import Control
@testable import Engine
import EngineHarness
import Foundation
import Merge
import Peer
import Testing

/// Household key rotation (docs/security.md, "Key rotation") with real engine cores on the
/// virtual network, and the rule itself as a pure function.
@Suite struct KeyRotationTests {
    // MARK: - Engines

    /// A, B and C are paired; B is away; A removes C. B takes a new key when it is back, with
    /// no invite (A's, or one it makes itself on learning of the removal before A's key
    /// reaches it: then one of the two wins on both); then nobody accepts C's key any more.
    @Test func aMemberThatWasAwayGetsTheNewKeyWithoutAnInviteAndThenTheRemovedKeyFailsEverywhere() throws {
        let home = try TestHousehold(["alice", "bob", "carol", "outsider"], discovery: true)
        let (alice, bob, carol) = (home["alice"], home["bob"], home["carol"])
        try home.pair(bob, with: alice)
        try home.pair(carol, with: alice)
        try home.wait("every member has said which key it holds", on: alice) { $0.keyEpochs().count == 3 }
        let firstKey = try #require(carol.core?.household.key)
        #expect(try home.run(alice) { $0.householdInfo().key?.state } == .settled)

        home.lan.stop(bob)
        _ = try home.run(alice) { try $0.devicesRemove(DeviceRemoveParams(device: "carol")) }
        #expect(alice.core?.household.current.version.epoch == 1)
        #expect(alice.acceptedKeys.contains(firstKey), "bob has not taken the new key, so alice still accepts the first")
        let waiting = try #require(try home.run(alice) { $0.householdInfo().key })
        #expect(waiting.state == .distributing && waiting.message.contains("bob"), "\(waiting.message)")

        try home.lan.launch(bob)
        try home.wait("alice and bob hold one new key and accept no other", on: alice) { core in
            core.household.held.count == 1 && bob.core?.household.held.count == 1 && core.household.key == bob.core?.household.key
        }
        let final = try #require(alice.core?.household.current.version)
        #expect(final.epoch == 1 && final != KeyVersion(epoch: 0, fingerprint: firstKey.fingerprint))
        #expect(try Set(home.run(alice) { try $0.replica.keyGrants() }.filter { $0.key == final }.map(\.member)) == Set([alice, bob].map(\.identity.publicKey.bytes)))
        #expect(!alice.acceptedKeys.contains(firstKey) && !bob.acceptedKeys.contains(firstKey))
        #expect(carol.core?.household.key == firstKey, "carol was sent nothing new")
        #expect(try home.run(bob) { $0.deviceInfos() }.first { $0.name == "alice" }?.keyEpoch == 1)
        #expect(try home.run(alice) { $0.householdInfo() }.key == HouseholdKeyState(
            epoch: 1, state: .settled, message: "rotated 1 time(s); every member holds the current key", previousKeysAccepted: 0))
        // The household id stays the one it had.
        #expect(try home.run(bob) { $0.householdInfo().id } == carol.core?.household.householdID)

        // A device that holds carol's key now fails at message 1, at either member.
        let outsider = home["outsider"]
        try home.run(outsider) { try $0.household.join(firstKey) }
        for member in [alice, bob] {
            #expect {
                _ = try home.connect(outsider, to: member.address.description)
            } throws: { error in
                "\(error)".contains("during the handshake")
            }
        }
    }

    /// A removal on each side of a partition: each side rotates to a key the other's removed
    /// device holds; once they meet, one more rotation excludes both, on both.
    @Test func twoRemovalsOnPartitionedDevicesConvergeToOneKeyThatExcludesBoth() throws {
        let home = try TestHousehold(["alice", "bob", "carol", "dave"], discovery: true)
        let (alice, bob, carol, dave) = (home["alice"], home["bob"], home["carol"], home["dave"])
        for joiner in [bob, carol, dave] { try home.pair(joiner, with: alice) }
        for node in [alice, bob] {
            try home.wait("every member has said which key it holds", on: node) { $0.keyEpochs().count == 4 }
        }
        let cut = [(alice, bob), (alice, dave), (carol, bob), (carol, dave)]
        for (one, other) in cut { home.lan.partitions.insert(VirtualLAN.pair(one.index, other.index)) }
        _ = try home.run(alice) { try $0.devicesRemove(DeviceRemoveParams(device: "dave")) }
        _ = try home.run(bob) { try $0.devicesRemove(DeviceRemoveParams(device: "carol")) }
        // Each side rotates on its own: carol takes alice's key, dave takes bob's.
        try home.wait("carol takes alice's new key", on: carol) { $0.household.current.version == alice.core?.household.current.version }
        try home.wait("dave takes bob's new key", on: dave) { $0.household.current.version == bob.core?.household.current.version }
        let daveKey = try #require(dave.core?.household.key), carolKey = try #require(carol.core?.household.key)
        #expect(daveKey != carolKey)

        home.lan.partitions.removeAll()
        try home.wait("alice and bob agree on a key", on: alice) { core in
            core.household.held.count == 1 && bob.core?.household.held.count == 1 && core.household.key == bob.core?.household.key
        }
        let final = try #require(alice.core?.household.current.version)
        #expect(final.epoch == 2)
        let grants = try home.run(alice) { try $0.replica.keyGrants() }.filter { $0.key == final }
        #expect(Set(grants.map(\.member)) == Set([alice, bob].map(\.identity.publicKey.bytes)))
        for member in [alice, bob] {
            #expect(!member.acceptedKeys.contains(daveKey) && !member.acceptedKeys.contains(carolKey))
        }
    }

    /// An invite made before a rotation still admits, and the joiner gets the current key and
    /// the household's lasting id.
    @Test func anInviteMadeBeforeARotationStillWorksAndItsJoinerGetsTheCurrentKey() throws {
        let home = try TestHousehold(["alice", "bob", "carol"])
        let (alice, bob, carol) = (home["alice"], home["bob"], home["carol"])
        try home.pair(bob, with: alice)
        try home.wait("bob has said which key it holds", on: alice) { $0.keyEpochs().count == 2 }
        let code = try home.run(alice) { try $0.invite().code }
        _ = try home.run(alice) { try $0.devicesRemove(DeviceRemoveParams(device: "bob")) }
        #expect(alice.core?.household.current.version.epoch == 1)

        let joined = try home.join(carol, code: code, address: alice)
        #expect(joined.household.id == alice.core?.household.householdID)
        #expect(carol.core?.household.current.version == alice.core?.household.current.version)
        try home.wait("carol says it holds the current key", on: alice) { $0.keyEpochs()[carol.identity.deviceID.description] == 1 }
    }

    /// A removed device invited back is given the grants of the inviter's new key, among them
    /// one sealed to a member the inviter cannot reach; it passes them on to that member,
    /// which it syncs with, and which could otherwise learn of the key (from the returning
    /// device's holding) with nothing to open it (simulation seed 19883).
    @Test func aDeviceInvitedBackPassesOnTheGrantsItWasGiven() throws {
        let home = try TestHousehold(["alice", "bob", "carol"], discovery: true)
        let (alice, bob, carol) = (home["alice"], home["bob"], home["carol"])
        try home.pair(bob, with: alice)
        try home.pair(carol, with: alice)
        try home.wait("every member has said which key it holds", on: bob) { $0.keyEpochs().count == 3 }
        // Alice removes carol while she reaches neither: bob and carol go on syncing, on the
        // first key, knowing nothing of it.
        for other in [bob, carol] { home.lan.partitions.insert(VirtualLAN.pair(alice.index, other.index)) }
        _ = try home.run(alice) { try $0.devicesRemove(DeviceRemoveParams(device: "carol")) }
        let newKey = try #require(alice.core?.household.current.version)
        #expect(newKey.epoch == 1)
        home.lan.partitions.remove(VirtualLAN.pair(alice.index, carol.index))
        try home.wait("carol hears from alice that she was removed", on: carol) { $0.removedFromHousehold != nil }
        #expect(carol.core?.peerStatuses().first { $0.name == "bob" }?.connected == true, "carol still syncs with bob")
        let code = try home.run(alice) { try $0.invite().code }
        _ = try home.join(carol, code: code, address: alice)
        try home.wait("bob, still cut off from alice, takes her key through carol", on: bob) { $0.household.current.version == newKey }
    }

    /// A member whose notesd advertises no key rotation (release 0.1) holds the rotation
    /// back, and `status` says who and what to do; nothing new is sent to it.
    @Test func aMemberOfTheFirstReleaseMakesTheRotationWaitAndStatusSaysSo() throws {
        let home = try TestHousehold(["alice", "laptop", "carol"])
        let (alice, laptop, carol) = (home["alice"], home["laptop"], home["carol"])
        laptop.handshakePayload = []
        try home.pair(laptop, with: alice)
        try home.pair(carol, with: alice)
        try home.wait("carol has said which key it holds", on: alice) { $0.keyEpochs()[carol.identity.deviceID.description] == 0 }
        _ = try home.run(alice) { try $0.devicesRemove(DeviceRemoveParams(device: "carol")) }
        let state = try #require(try home.run(alice) { $0.householdInfo().key })
        #expect(state.state == .waitingForUpdate && state.epoch == 0)
        #expect(state.message.hasPrefix("laptop runs notesd 0.1 or earlier: key rotation waits until it is updated"), "\(state.message)")
        #expect(alice.core?.household.held.count == 1, "no key was made")
    }

    // MARK: - The rule

    private static let me = [UInt8](repeating: 1, count: 32), bob = [UInt8](repeating: 2, count: 32), carol = [UInt8](repeating: 3, count: 32)
    private static let first = KeyVersion(epoch: 0, fingerprint: [UInt8](repeating: 9, count: 16))

    private func member(_ key: [UInt8], _ name: String, revoked: Bool = false) -> KeyRotation.Member {
        KeyRotation.Member(publicKey: key, name: name, revoked: revoked)
    }

    @Test func withNobodyRemovedTheFirstKeyStaysAndTheDeviceSaysItHoldsIt() {
        let plan = KeyRotation.plan(.init(
            me: Self.me, members: [member(Self.me, "me"), member(Self.bob, "bob")], grants: [], holdings: [], held: [Self.first]))
        #expect(plan == KeyRotation.Plan(steps: [.hold(Self.first)], status: .settled(Self.first)))
    }

    @Test func aRemovalMintsAKeyForTheRemainingMembersOnlyOnceEveryOneTakesPart() {
        let members = [member(Self.me, "me"), member(Self.bob, "bob"), member(Self.carol, "carol", revoked: true)]
        let holdings = [KeyHolding(member: Self.me, key: Self.first)]
        let waiting = KeyRotation.plan(.init(me: Self.me, members: members, grants: [], holdings: holdings, held: [Self.first]))
        #expect(waiting.status == .waitingForUpdate(Self.first, members: [member(Self.bob, "bob")]))
        #expect(waiting.steps.isEmpty)
        let ready = KeyRotation.plan(.init(
            me: Self.me, members: members, grants: [], holdings: holdings + [KeyHolding(member: Self.bob, key: Self.first)], held: [Self.first]))
        #expect(ready.steps == [.mint(epoch: 1, members: [Self.me, Self.bob])])
    }

    @Test func theNewestKeySealedToARemovedDeviceIsReplacedAndTwoAtOneEpochHaveOneWinner() {
        let low = KeyVersion(epoch: 1, fingerprint: [UInt8](repeating: 1, count: 16))
        let high = KeyVersion(epoch: 1, fingerprint: [UInt8](repeating: 2, count: 16))
        let members = [member(Self.me, "me"), member(Self.bob, "bob"), member(Self.carol, "carol", revoked: true)]
        let grants = [KeyGrant(key: low, member: Self.me, sealed: []), KeyGrant(key: high, member: Self.carol, sealed: [])]
        let holdings = [KeyHolding(member: Self.me, key: low), KeyHolding(member: Self.bob, key: high)]
        let plan = KeyRotation.plan(.init(me: Self.me, members: members, grants: grants, holdings: holdings, held: [low, Self.first]))
        #expect(plan.steps == [.mint(epoch: 2, members: [Self.me, Self.bob])], "the winner is `high`, which carol holds")
    }

    /// A newer key this device hears of but that is not sealed to it (its holders may never
    /// come back: simulation seed 19883) does not keep an unsafe key in use: a key at the next
    /// epoch replaces both. Sealed to it, the newer key is waited for (it is taken as soon as
    /// it opens).
    @Test func aNewerKeyNotSealedToThisDeviceDoesNotKeepItsUnsafeKeyInUse() {
        let newer = KeyVersion(epoch: 1, fingerprint: [UInt8](repeating: 4, count: 16))
        let members = [member(Self.me, "me"), member(Self.bob, "bob"), member(Self.carol, "carol", revoked: true)]
        let holdings = [KeyHolding(member: Self.me, key: Self.first), KeyHolding(member: Self.bob, key: Self.first), KeyHolding(member: Self.bob, key: newer)]
        let stranded = KeyRotation.plan(.init(
            me: Self.me, members: members, grants: [KeyGrant(key: newer, member: Self.bob, sealed: [])], holdings: holdings, held: [Self.first]))
        #expect(stranded.steps == [.mint(epoch: 2, members: [Self.me, Self.bob])])
        let sealedToMe = KeyRotation.plan(.init(
            me: Self.me, members: members, grants: [KeyGrant(key: newer, member: Self.me, sealed: [])], holdings: holdings, held: [Self.first]))
        #expect(sealedToMe == KeyRotation.Plan(status: .waitingForKey(newer)))
        let safe = KeyRotation.plan(.init(
            me: Self.me, members: members.dropLast(), grants: [], holdings: holdings, held: [Self.first]))
        #expect(safe == KeyRotation.Plan(status: .waitingForKey(newer)), "with nobody removed, the key held is safe and the newer one is waited for")
    }

    @Test func olderKeysAreDroppedOnceEveryMemberHoldsTheCurrentOneAndAJoinerIsSealedIn() {
        let key = KeyVersion(epoch: 1, fingerprint: [UInt8](repeating: 5, count: 16))
        let members = [member(Self.me, "me"), member(Self.bob, "bob"), member(Self.carol, "carol")]
        let grants = [KeyGrant(key: key, member: Self.me, sealed: []), KeyGrant(key: key, member: Self.bob, sealed: [])]
        let some = [KeyHolding(member: Self.me, key: key), KeyHolding(member: Self.bob, key: key)]
        let waiting = KeyRotation.plan(.init(me: Self.me, members: members, grants: grants, holdings: some, held: [key, Self.first]))
        #expect(waiting == KeyRotation.Plan(
            steps: [.extend(key, members: [Self.carol])], status: .distributing(key, waitingFor: [member(Self.carol, "carol")])))
        let all = some + [KeyHolding(member: Self.carol, key: key)]
        let done = KeyRotation.plan(.init(me: Self.me, members: members, grants: grants, holdings: all, held: [key, Self.first]))
        #expect(done.steps == [.extend(key, members: [Self.carol]), .dropPrevious])
    }

    @Test func aRemovedDeviceRotatesNothing() {
        let plan = KeyRotation.plan(.init(
            me: Self.me, members: [member(Self.me, "me", revoked: true), member(Self.bob, "bob", revoked: true)], grants: [], holdings: [],
            held: [Self.first]))
        #expect(plan == KeyRotation.Plan(status: .notMember))
    }

    // MARK: - The key file

    @Test func theKeyFileKeepsTheFirstReleasesFormUntilARotationThenKeepsTheIdAndTheOlderKeys() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try HouseholdKey(directory: directory)
        let id = keys.householdID, first = keys.key
        #expect(try Data(contentsOf: URL(fileURLWithPath: keys.path)).count == 32, "a never-rotated key is the bare 32 bytes release 0.1 reads")
        let next = PreSharedKey.generate()
        try keys.install(next, epoch: 1)
        let reread = try HouseholdKey(directory: directory)
        #expect(reread.householdID == id && reread.key == next && reread.current.version.epoch == 1)
        #expect(reread.held.map(\.key) == [next, first])
        try reread.dropPrevious()
        #expect(try HouseholdKey(directory: directory).held.map(\.key) == [next])
        let mode = try FileManager.default.attributesOfItem(atPath: keys.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }

    /// Invited back into its own household, a device adds the inviter's key to the keys it
    /// holds that are at least as new: a newer one it made meanwhile stays current (simulation
    /// seed 13738) and the inviter's is still accepted until every member holds it; keys
    /// older than the inviter's go (a removed device may hold them).
    @Test func aDeviceInvitedBackKeepsItsNewerKeyAndAddsTheInvitersKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try HouseholdKey(directory: directory)
        let (one, other) = (PreSharedKey.generate(), PreSharedKey.generate())
        // Of two keys made at once at epoch 1, the device holds the one that sorts first.
        let (mine, inviters) = KeyVersion(epoch: 1, fingerprint: one.fingerprint) > KeyVersion(epoch: 1, fingerprint: other.fingerprint)
            ? (one, other) : (other, one)
        try keys.install(mine, epoch: 1)
        try keys.rejoin(inviters, epoch: 1)
        #expect(keys.held.map(\.key) == [mine, inviters], "the first key, older than the inviter's, is no longer accepted")
        #expect(keys.current.version.epoch == 1)
        try keys.rejoin(inviters, epoch: 1)
        #expect(keys.held.map(\.key) == [mine, inviters], "the same invitation again changes nothing")
        try keys.rejoin(mine, epoch: 0)
        #expect(keys.held.map(\.key) == [mine, inviters] && keys.current.version.epoch == 1, "a key held under a newer epoch keeps it")
        let newer = PreSharedKey.generate()
        try keys.rejoin(newer, epoch: 2)
        #expect(try HouseholdKey(directory: directory).held.map(\.key) == [newer], "a newer key replaces the older ones, on disk too")
        // Joining another household forgets this one's keys.
        let elsewhere = PreSharedKey.generate()
        try keys.join(elsewhere)
        #expect(keys.held.map(\.key) == [elsewhere] && keys.householdID == HouseholdKey.firstKeyID(elsewhere))
    }

    @Test func aDamagedKeyFileIsRefusedWithWhatToDo() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/" + HouseholdKey.fileName
        _ = FileManager.default.createFile(atPath: path, contents: Data("notesd household keys v1\nhousehold zz\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect { _ = try HouseholdKey(directory: directory) } throws: { "\($0)".contains("move it aside") }
    }
}

@Suite struct HouseholdKeysFrameTests {
    @Test func aHouseholdKeysFrameRoundTripsAndAMalformedOneIsAnError() throws {
        let key = PreSharedKey.generate(), device = DeviceIdentity.generate()
        let version = KeyVersion(epoch: 3, fingerprint: key.fingerprint)
        let keys = HouseholdKeys(
            household: [UInt8](repeating: 7, count: 16), grants: [KeyGrant(key: version, member: device.publicKey.bytes, sealed: key.sealed(to: device.publicKey))],
            holdings: [KeyHolding(member: device.publicKey.bytes, key: version)])
        let bytes = FrameCodec.encode(.householdKeys(keys))
        #expect(try FrameCodec.decode(bytes) == .householdKeys(keys))
        #expect(device.openSealedKey(keys.grants[0].sealed) == key, "only the member it was sealed to opens it")
        #expect(DeviceIdentity.generate().openSealedKey(keys.grants[0].sealed) == nil)
        #expect(throws: (any Error).self) { try FrameCodec.decode(Array(bytes.dropLast())) }
    }
}
