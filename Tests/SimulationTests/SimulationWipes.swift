import Control
import Engine
import EngineHarness
import Foundation
import Merge
@testable import Peer

/// The wipe fault: a member's data is gone (a reinstall, a lost disk), so it starts again as
/// a new device, a household of one with a new identity and an empty library, and the person
/// joins it to the household again with a fresh invite code from a member. What only the
/// wiped device held and no other device had received is gone with it, by design (the same
/// accounting as a restored backup); everything the household holds must come back to it.
extension Simulation {
    func wipeAndRejoin(_ node: VirtualLAN.Node) throws {
        let oldDevice = node.identity.deviceID.description
        lan.crash(node)
        // The tokens the wipe takes away: in the device's library, held by no other device
        // (their files, up or down).
        let current = try Self.tokens(inLibraryAt: node.directory + "/notes.db")
        let elsewhere = try tokensHeld(byAllBut: node)
        try lan.wipe(node)
        removed.formUnion(current.subtracting(elsewhere))
        // Its backups were in its data directory (`notesctl backup` without a file).
        backups[node.index] = nil
        wipes += 1
        try launch(node)
        guard let inviter = random.pick(nodes.filter { $0 !== node && $0.isUp && isMember($0) }) else { return }
        if random.chance(0.5) {
            // The person tidies the roster first: the old device will not come back.
            lan.trace.append("\(inviter.name) removes the wiped device's old identity")
            _ = try? lan.request(inviter) { try $0.devicesRemove(DeviceRemoveParams(device: oldDevice)) }
        }
        try pair(node, inviter: inviter, wait: random.chance(0.5))
    }
}
