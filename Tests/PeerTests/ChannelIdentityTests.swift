import Foundation
import Testing
@testable import Peer
import TestSupport

@Suite("Device identity: ids, base32 and the key file")
struct ChannelIdentityTests {
    @Test("base32 matches the RFC 4648 test vectors (without padding)")
    func base32Vectors() {
        let vectors = ["": "", "f": "MY", "fo": "MZXQ", "foo": "MZXW6", "foob": "MZXW6YQ", "fooba": "MZXW6YTB", "foobar": "MZXW6YTBOI"]
        for (plain, encoded) in vectors {
            #expect(String(decoding: Base32.encode(Array(plain.utf8)), as: UTF8.self) == encoded)
            #expect(Base32.decode(Array(encoded.utf8), byteCount: plain.utf8.count) == Array(plain.utf8))
        }
        #expect(Base32.decode(Array("MZ".utf8), byteCount: 1) == nil, "non-zero padding bits are not canonical")
    }

    @Test("a device id is the base32 BLAKE2b-256 fingerprint with Luhn mod 32 check characters")
    func knownDeviceID() throws {
        // Computed independently (Python hashlib.blake2b + base64.b32encode + Luhn mod N).
        let publicKey = try #require(DevicePublicKey(bytes: Array(0..<32)))
        let id = DeviceID(publicKey: publicKey)
        #expect(id.description == "ZMXVCYH-4D57AL7-JK66SOT-IC2I3IO-XFU6AJT-VJTSM2V-RZVLZ3V-BFAPLAB")
        #expect(id.short == "ZMXVCYH")
    }

    @Test("device ids round-trip and parsing forgives case, spaces and dashes")
    func deviceIDRoundTrip() throws {
        for _ in 0..<50 {
            let id = DeviceIdentity.generate().deviceID
            let text = id.description
            #expect(text.count == 56 + 7)
            #expect(try DeviceID(parsing: text) == id)
            #expect(try DeviceID(parsing: text.lowercased()) == id)
            #expect(try DeviceID(parsing: text.replacingOccurrences(of: "-", with: " ")) == id)
            #expect(try DeviceID(parsing: text.replacingOccurrences(of: "-", with: "")) == id)
            #expect(DeviceID(fingerprint: id.fingerprint) == id)
        }
    }

    @Test("every single-character typo in a device id is caught")
    func deviceIDTypos() throws {
        let compact = Array(DeviceIdentity.generate().deviceID.compactCharacters)
        for position in compact.indices {
            for replacement in Base32.alphabet where replacement != compact[position] {
                var typo = compact
                typo[position] = replacement
                let text = String(decoding: typo, as: UTF8.self)
                #expect(throws: DeviceIDParseError.checkCharacterMismatch(group: position / 14 + 1)) { try DeviceID(parsing: text) }
            }
        }
    }

    @Test("the short form is the full form's first seven characters")
    func shortFormIsThePrefix() {
        for _ in 0..<20 {
            let id = DeviceIdentity.generate().deviceID
            #expect(id.short == String(id.description.prefix(7)))
        }
    }

    @Test("device id parse errors say what is wrong")
    func deviceIDParseErrors() {
        let id = DeviceIdentity.generate().deviceID.description
        #expect(throws: DeviceIDParseError.shortFormGiven) { try DeviceID(parsing: String(id.prefix(7))) }
        #expect(throws: DeviceIDParseError.tooShort(count: 18)) { try DeviceID(parsing: String(id.prefix(20))) }
        #expect(throws: DeviceIDParseError.tooLong(count: 57)) { try DeviceID(parsing: id + "A") }
        #expect(throws: DeviceIDParseError.invalidCharacter("9", position: 3)) { try DeviceID(parsing: "AB9" + id.dropFirst(3)) }
        #expect(DeviceIDParseError.checkCharacterMismatch(group: 2).description.contains("typo"))
        #expect(DeviceIDParseError.tooShort(count: 20).description.contains("too short"))
        #expect(DeviceID("not an id") == nil)
    }

    @Test("the key file is created with mode 0600 and loads back as the same identity")
    func keyFileRoundTrip() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let created = try DeviceIdentity.loadOrCreate(inDirectory: directory)
        let path = directory + "/" + DeviceIdentity.keyFileName
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect((attributes[.size] as? NSNumber)?.intValue == 53)
        let loaded = try DeviceIdentity.loadOrCreate(inDirectory: directory)
        #expect(loaded.deviceID == created.deviceID)
        #expect(loaded.keyPair.privateKey == created.keyPair.privateKey)
        #expect(throws: IdentityFileError(path: path, problem: .alreadyExists)) { try DeviceIdentity.generate().save(to: path) }
    }

    @Test("a key file readable by group or others is refused, naming the file and the fix")
    func keyFileTooOpen() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try DeviceIdentity.loadOrCreate(inDirectory: directory)
        let path = directory + "/" + DeviceIdentity.keyFileName
        for mode in [0o644, 0o640, 0o604, 0o660] as [mode_t] {
            #expect(chmod(path, mode) == 0)
            let error = #expect(throws: IdentityFileError.self) { try DeviceIdentity.loadOrCreate(inDirectory: directory) }
            #expect(error?.problem == .readableByOthers(mode: mode))
            #expect(error?.description.contains(path) == true)
            #expect(error?.description.contains("chmod 600 \(path)") == true)
        }
        #expect(chmod(path, 0o400) == 0)
        #expect(throws: Never.self) { try DeviceIdentity.load(from: path) }
    }

    @Test("a malformed or odd key file is refused with a clear error")
    func keyFileMalformed() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/" + DeviceIdentity.keyFileName
        let cases: [([UInt8], String)] = [
            ([], "0 bytes long"),
            (DeviceIdentity.keyFileMagic + [UInt8](repeating: 1, count: 31), "52 bytes long"),
            (DeviceIdentity.keyFileMagic + [UInt8](repeating: 1, count: 33), "54 bytes long"),
            (Array("notesd-device-key-v9\n".utf8) + [UInt8](repeating: 1, count: 32), "header"),
        ]
        for (contents, detail) in cases {
            try? FileManager.default.removeItem(atPath: path)
            #expect(FileManager.default.createFile(atPath: path, contents: Data(contents), attributes: [.posixPermissions: 0o600]))
            let error = #expect(throws: IdentityFileError.self) { try DeviceIdentity.loadOrCreate(inDirectory: directory) }
            guard case .malformed(let message)? = error?.problem else {
                Issue.record("expected a malformed-file error, got \(String(describing: error))")
                continue
            }
            #expect(message.contains(detail))
            #expect(error?.description.contains(path) == true)
            #expect(error?.description.contains("move it away") == true)
        }

        try FileManager.default.removeItem(atPath: path)
        let target = directory + "/elsewhere.key"
        try DeviceIdentity.generate().save(to: target)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        #expect(throws: IdentityFileError(path: path, problem: .notARegularFile)) { try DeviceIdentity.load(from: path) }

        let missing = directory + "/no-such-directory"
        #expect(throws: IdentityFileError(path: missing + "/device.key", problem: .missingDirectory)) {
            try DeviceIdentity.loadOrCreate(inDirectory: missing)
        }
    }

    @Test("descriptions never show private or pre-shared keys")
    func secretsStayOutOfLogs() {
        let identity = DeviceIdentity.generate()
        #expect(identity.description == "DeviceIdentity(\(identity.deviceID))")
        #expect(PreSharedKey.generate().description == "PreSharedKey(redacted)")
    }

    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("notesd-channel-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }
}
