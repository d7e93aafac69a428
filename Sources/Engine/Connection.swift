import Merge
import Peer

/// One connection as the engine sees it: everything the core knows about it, and the one
/// state it is in (docs/architecture.md, "One connection").
///
/// ```
/// dialing(household) ─┐                    ┌─▶ syncing(SyncSession) ─┐
/// inbound handshake ──┼─ handshake done ───┤                          ├─▶ closing(reason) ─▶ gone
/// dialing(join) ──────┘                    ├─▶ admitting(invite)  ───┤
///                                          └─▶ joining(attempt)   ───┘
/// ```
/// A connection leaves the table when the network reports it closed (or its dial failed).
struct Connection {
    enum State {
        /// We asked the network to dial; it is connecting and running the Noise handshake.
        /// (An inbound connection is not known to the core until its handshake is done.)
        case dialing(DialPurpose)
        /// A device proved an invite's key; we wait for its join request (`Pairing.Admission`).
        case admitting(Pairing.Admission)
        /// We reached an inviter with an invite's key and sent our join request; we wait for
        /// its answer (`Pairing.Join`).
        case joining(Pairing.Join)
        /// Both devices are in the household and the sync session runs.
        case syncing(SyncSession)
        /// We refused the peer, pairing finished, or the session ended; the network was asked
        /// to close and has not said it did.
        case closing(reason: String)
    }

    /// Why we dialled.
    enum DialPurpose {
        /// To sync with a household device at a dial target.
        case household
        /// To join a household with an invite code (a `JoinAttempt`).
        case join(JoinAttempt.ID)
    }

    let id: PeerNetwork.ConnectionID
    let direction: PeerNetwork.Direction
    var remote: String
    /// The dial target this connection serves (household dials only).
    var target: String?
    var state: State
    /// The peer, once the handshake proved its key.
    var device: DeviceID?
    var publicKey: [UInt8]?
    /// The name its Hello gave.
    var deviceName: String?
    /// What the handshake payloads agreed (`EngineCore+Versions`); `.release01` for a peer
    /// that advertised nothing. Set once the handshake is done.
    var agreement: PeerAgreement?
    var entriesSent = 0
    var entriesReceived = 0
    /// The session has been idle (nothing to exchange) at least once since it last wasn't.
    var caughtUp = false
    var lastProgressEvent: UInt64 = 0
    /// The peer's vector as the session last knew it; outlives the session (`persistPeer`).
    var peerVector: VersionVector?
    /// Household key grants and holdings to tell the peer once it holds every entry this
    /// device has (EngineCore+KeyRotation): then it already has the roster they were made
    /// from.
    var keysToShare = HouseholdKeySet()

    /// The sync session, while syncing.
    var session: SyncSession? {
        switch state {
        case .syncing(let session): session
        case .dialing, .admitting, .joining, .closing: nil
        }
    }

    var isSyncing: Bool { session != nil }

    /// The join attempt this connection serves, dialling or joining.
    var joinAttempt: JoinAttempt.ID? {
        switch state {
        case .dialing(.join(let attempt)): attempt
        case .joining(let join): join.attempt
        case .dialing(.household), .admitting, .syncing, .closing: nil
        }
    }
}
