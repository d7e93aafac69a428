/// The merge of two concurrent versions of a roster entry: `name` and `publicKey` follow the
/// scalar rule; `revoked` is sticky (either side revoked → revoked), because revocation is final;
/// `added` is the earliest known; delete versus edit, the edit wins.
public enum DeviceMerge {
    public static func merge(base: Record<Device>?, _ a: Version<Device>, _ b: Version<Device>) -> Record<Device> {
        let (winner, loser) = FieldRules.ordered(a, b)
        let base = base?.live
        if let decided = FieldRules.deletion(base: base, winner.record, loser.record) { return decided }
        guard case .live(let won) = winner.record, case .live(let lost) = loser.record else {
            preconditionFailure("FieldRules.deletion decides every case with a tombstone")
        }
        return .live(Device(
            name: FieldRules.scalar(base: base?.name, winner: won.name, loser: lost.name),
            publicKey: FieldRules.scalar(base: base?.publicKey, winner: won.publicKey, loser: lost.publicKey),
            revoked: won.revoked || lost.revoked,
            added: [won.added, lost.added].filter { $0 > 0 }.min() ?? 0))
    }
}
