import Testing
@testable import Peer
@Test func peerModuleLinks() { _ = PeerModule.self }
