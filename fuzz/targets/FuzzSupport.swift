import CSodium
#if canImport(Glibc)
import Glibc
#endif

/// Shared by every libFuzzer target: deterministic randomness and seed-corpus writing.
///
/// Fuzzing runs one input at a time on one thread, so the few globals here are only ever
/// touched from that thread; `nonisolated(unsafe)` says so to the compiler.
enum FuzzSupport {
    /// Replaces libsodium's random source with a counter-seeded deterministic one, so fixtures
    /// (keys, stream headers) are the same in every run and a crashing input replays exactly.
    /// Must run before the first libsodium call; `prepare()` is the first thing each target does.
    static let prepared: Bool = {
        randombytes_set_implementation(&deterministicRandom)
        Sodium.initialize()
        return true
    }()

    static func prepare() { precondition(prepared) }

    /// When `NOTESD_FUZZ_WRITE_SEEDS` names a directory, writes `seeds` there (one file each)
    /// once per process; `fuzz/build.sh --seeds` uses this to refresh `fuzz/corpus/<target>/`.
    static func writeSeedsIfRequested(_ seeds: [(name: String, bytes: [UInt8])]) {
        guard !seedsWritten, let directory = getenv("NOTESD_FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return }
        seedsWritten = true
        for seed in seeds {
            guard let file = fopen(directory + "/" + seed.name, "wb") else { fatalError("cannot write seed \(seed.name) into \(directory)") }
            _ = seed.bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
            fclose(file)
        }
    }

    nonisolated(unsafe) private static var seedsWritten = false
}

nonisolated(unsafe) private var randomCounter: UInt64 = 0

nonisolated(unsafe) private var deterministicRandom = randombytes_implementation(
    implementation_name: { UnsafeRawPointer(("notesd-fuzz-deterministic" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self) },
    random: {
        var value: UInt32 = 0
        withUnsafeMutableBytes(of: &value) { fillDeterministically($0.baseAddress!, $0.count) }
        return value
    },
    stir: nil,
    uniform: nil,
    buf: { buffer, size in
        guard let buffer else { return }
        fillDeterministically(buffer, size)
    },
    close: nil)

private func fillDeterministically(_ buffer: UnsafeMutableRawPointer, _ size: Int) {
    var seed = [UInt8](repeating: 0, count: Int(randombytes_SEEDBYTES))
    for index in 0..<8 { seed[index] = UInt8(truncatingIfNeeded: randomCounter >> (8 * index)) }
    randomCounter += 1
    randombytes_buf_deterministic(buffer, size, seed)
}
