#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport

/// The tests' own child processes start with only descriptors 0, 1 and 2: a pipe, socket or
/// connection another test holds open meanwhile must not live on in a child, where it keeps
/// the other end from seeing end of file (docs/testing.md).
@Suite struct ChildProcessTests {
    @Test func aChildInheritsNothingBeyondItsStandardDescriptors() async throws {
        var ends: [Int32] = [0, 0]
        // A plain pipe, inheritable on purpose: what a careless test would hold.
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let script = #"for fd in "$@"; do if [ -e /proc/$$/fd/$fd ]; then echo "$fd open"; else echo "$fd closed"; fi; done"#
        let result = try await ChildProcess.run(["/bin/sh", "-c", script, "sh", "0", "\(ends[0])", "\(ends[1])"]).check()
        #expect(result.output == "0 open\n\(ends[0]) closed\n\(ends[1]) closed\n")
    }
}
