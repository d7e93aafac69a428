import Control
import Foundation
import Peer

/// Pairing on one connection (docs/security.md, "Pairing"), without I/O like `SyncSession`:
/// what each side sends and how it reads the other's frames. The inviter's side is an
/// `Admission`, the joiner's a `Join`; the engine does what their steps say (store the new
/// member, replace the household key) and `JoinAttempt` tries one address after another.
enum Pairing {
    /// The inviting device's side: the peer proved the key of invite `inviteSecretID`.
    struct Admission {
        let inviteSecretID: String

        enum Step {
            /// Store the device under `name` (its id's short form when it gave none).
            case admit(name: String)
            /// Refuse and close: only a join request belongs on an invite connection.
            case refuse(Refusal)
        }

        func receive(_ frame: Frame, fallbackName: String) -> Step {
            guard case .joinRequest(let name) = frame else {
                return .refuse(Refusal(.other, "expected a join request on an invite connection"))
            }
            let clean = name.trimmingCharacters(in: .whitespacesAndNewlines)
            return .admit(name: clean.isEmpty ? fallbackName : name)
        }

        /// What the joiner is told when the store refused the invite.
        static func refusal(_ reason: InviteRefusal, lifetime: String) -> Refusal {
            switch reason {
            case .unknown: Refusal(.inviteUnknown, "this invite code is not known to the inviting device; ask for a new one with `notesctl invite`")
            case .expired: Refusal(.inviteExpired, "this invite code has expired (codes last \(lifetime)); ask for a new one with `notesctl invite`")
            case .used: Refusal(.inviteUsed, "this invite code was already used; ask for a new one with `notesctl invite`")
            }
        }

        /// The answer once the new member is stored: the household key and its roster.
        static func accepted(householdKey: PreSharedKey, roster: [RosterMember]) -> Frame {
            .joinAccepted(householdKey: householdKey.bytes, roster: roster)
        }
    }

    /// The joining device's side of one connection of a `JoinAttempt`.
    struct Join {
        let attempt: JoinAttempt.ID
        /// The inviter takes part in key rotation, so its key sets come with its answer (in
        /// either order): the join completes when both are here.
        let expectsKeys: Bool
        private var keys: HouseholdKeys?
        private var admitted: (key: PreSharedKey, roster: [RosterMember])?

        enum Step {
            /// The inviter admitted us: its household key and roster, and its key sets if sent.
            case accepted(PreSharedKey, [RosterMember], HouseholdKeys?)
            /// The inviter refused the code.
            case refused(RPCError)
            /// Nothing to do yet (half of the answer, a frame pairing does not use, or a
            /// malformed key).
            case ignored
        }

        /// The handshake is done: ask to join under `deviceName`.
        static func start(attempt: JoinAttempt.ID, deviceName: String, expectsKeys: Bool) -> (Join, [Frame]) {
            (Join(attempt: attempt, expectsKeys: expectsKeys), [.joinRequest(deviceName: deviceName)])
        }

        mutating func receive(_ frame: Frame) -> Step {
            switch frame {
            case .householdKeys(let keys):
                guard expectsKeys else { return .ignored }
                self.keys = keys
            case .joinAccepted(let key, let members):
                guard let householdKey = PreSharedKey(bytes: key) else { return .ignored }
                admitted = (householdKey, members)
            case .refuse(let refusal):
                let code: ControlErrorCode = switch refusal.code {
                case .inviteExpired: .inviteExpired
                case .inviteUsed: .inviteUsed
                default: .pairingFailed
                }
                return .refused(RPCError(code: code, message: refusal.message))
            default:
                return .ignored
            }
            guard let admitted, keys != nil || !expectsKeys else { return .ignored }
            return .accepted(admitted.key, admitted.roster, keys)
        }
    }
}
