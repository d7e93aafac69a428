import Testing
@testable import Discovery

@Suite struct TXTRecordTests {
    private func parse(_ entries: [String]) -> TXTRecord {
        TXTRecord(entries: entries.map { Array($0.utf8) })
    }

    @Test func readsVersionAndDeviceID() {
        #expect(parse(["v=1", "id=ABCDEF234567"]) == TXTRecord(version: 1, deviceID: "ABCDEF234567"))
    }

    @Test func keysAreCaseInsensitive() {
        #expect(parse(["V=2", "Id=abc"]) == TXTRecord(version: 2, deviceID: "abc"))
    }

    @Test func onlyTheFirstOccurrenceOfAKeyCounts() {
        #expect(parse(["id=AAA", "id=BBB"]).deviceID == "AAA")
        // The first one is malformed: it still counts, so the id is absent rather than BBB.
        #expect(parse(["id=bad!", "ID=BBB"]).deviceID == nil)
        // A boolean attribute (no "=") is the first occurrence too (RFC 6763 §6.4).
        #expect(parse(["id", "id=BBB"]).deviceID == nil)
    }

    @Test func malformedValuesAreDropped() {
        #expect(parse(["v=", "id="]) == TXTRecord())
        #expect(parse(["v=abc"]).version == nil)
        #expect(parse(["v=-1"]).version == nil)
        #expect(parse(["v=1234567"]).version == nil)
        #expect(parse(["v=999999"]).version == 999_999)
        #expect(parse(["id=has space"]).deviceID == nil)
        #expect(parse(["id=" + String(repeating: "A", count: TXTRecord.maxDeviceIDLength + 1)]).deviceID == nil)
        #expect(parse(["id=" + String(repeating: "A", count: TXTRecord.maxDeviceIDLength)]).deviceID != nil)
        #expect(parse(["=x", "other=1"]) == TXTRecord())
    }

    @Test func oddBytesNeverCrashAndAreNotTrusted() {
        let nonUTF8: [UInt8] = Array("id=".utf8) + [0xFF, 0xFE, 0x00, 0x41]
        #expect(TXTRecord(entries: [nonUTF8]).deviceID == nil)
        let oversized = Array("id=".utf8) + [UInt8](repeating: 0x41, count: 300)
        #expect(TXTRecord(entries: [oversized, Array("id=OK".utf8)]).deviceID == "OK",
                "an over-long entry is skipped entirely, so the next id counts")
        #expect(TXTRecord(entries: [[], [0x3D], [0x3D, 0x3D]]) == TXTRecord())
    }

    @Test func looksAtABoundedNumberOfEntries() {
        let filler = (0..<TXTRecord.maxEntries).map { "k\($0)=x" }
        #expect(parse(filler + ["id=LATE"]).deviceID == nil)
        #expect(parse(Array(filler.dropLast()) + ["id=LAST"]).deviceID == "LAST")
    }
}

@Suite struct AdvertisementTests {
    @Test func defaultsTheServiceNameToTheDeviceID() throws {
        let advertisement = try Advertisement(port: 7001, deviceID: "ABC234")
        #expect(advertisement.serviceName == "notesd-ABC234")
        #expect(advertisement.txtEntries == ["v=1", "id=ABC234"])
    }

    @Test func theLongestDeviceIDStillMakesAValidDefaultName() throws {
        let id = String(repeating: "Z", count: TXTRecord.maxDeviceIDLength)
        let advertisement = try Advertisement(port: 1, deviceID: id)
        #expect(advertisement.serviceName.utf8.count <= Advertisement.maxServiceNameBytes)
    }

    @Test func rejectsWhatCannotBePublished() {
        #expect(throws: AdvertisementError.self) { try Advertisement(port: 0, deviceID: "A") }
        #expect(throws: AdvertisementError.self) { try Advertisement(port: 1, deviceID: "") }
        #expect(throws: AdvertisementError.self) { try Advertisement(port: 1, deviceID: "a-b") }
        #expect(throws: AdvertisementError.self) { try Advertisement(port: 1, deviceID: "A", serviceName: "") }
        #expect(throws: AdvertisementError.self) {
            try Advertisement(port: 1, deviceID: "A", serviceName: String(repeating: "é", count: 32))
        }
        #expect(throws: AdvertisementError.self) { try Advertisement(port: 1, deviceID: "A", serviceName: "a\nb") }
        #expect(throws: Never.self) {
            try Advertisement(port: 1, deviceID: "A", serviceName: String(repeating: "x", count: 63))
        }
    }

    @Test func errorsSayWhatToChange() {
        do {
            _ = try Advertisement(port: 7001, deviceID: "not valid")
            Issue.record("expected an error")
        } catch {
            #expect(error.message.contains("'not valid'"))
            #expect(error.message.contains("letters or digits"))
        }
    }
}
