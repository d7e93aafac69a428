import Testing
@testable import Discovery

@Suite struct PeerAddressTests {
    @Test func parsesAndCanonicalisesNumericAddresses() throws {
        let v4 = try #require(IPAddress(numeric: "10.199.0.2", interfaceIndex: 3))
        #expect(v4.family == .ipv4)
        #expect(v4.interfaceIndex == nil, "only IPv6 link-local addresses keep the interface")
        #expect(v4.description == "10.199.0.2")

        let v6 = try #require(IPAddress(numeric: "2001:DB8:0:0::1", interfaceIndex: 3))
        #expect(v6.ip == "2001:db8::1")
        #expect(v6.interfaceIndex == nil)
    }

    @Test func linkLocalAddressesCarryTheirInterface() throws {
        let address = try #require(IPAddress(numeric: "FE80::1", interfaceIndex: 7))
        #expect(address.ip == "fe80::1")
        #expect(address.interfaceIndex == 7)
        #expect(address.description == "fe80::1%7")
        #expect(IPAddress(numeric: "febf::1", interfaceIndex: 2)?.interfaceIndex == 2)
        #expect(IPAddress(numeric: "fec0::1", interfaceIndex: 2)?.interfaceIndex == nil)
    }

    @Test func rejectsAnythingNotNumeric() {
        for text in ["", "localhost", "10.0.0", "10.0.0.256", "fe80::1%2", "::g", String(repeating: "1", count: 500)] {
            #expect(IPAddress(numeric: text) == nil, "\(text)")
        }
    }

    @Test func sortsIPv4First() throws {
        let addresses = try ["fe80::1", "10.0.0.2", "2001:db8::1", "10.0.0.1"].map { try #require(IPAddress(numeric: $0)) }
        #expect(addresses.sorted().map(\.ip) == ["10.0.0.1", "10.0.0.2", "2001:db8::1", "fe80::1"])
    }
}

@Suite struct PeerEndpointTests {
    @Test(arguments: [
        ("laptop.local:7001", "laptop.local", 7001),
        ("10.0.0.2:1", "10.0.0.2", 1),
        ("[fe80::1%eth0]:65535", "fe80::1%eth0", 65535),
        ("[::1]:7001", "::1", 7001),
    ] as [(String, String, UInt16)])
    func parses(text: String, host: String, port: UInt16) throws {
        let endpoint = try PeerEndpoint(parsing: text)
        #expect(endpoint.host == host)
        #expect(endpoint.port == port)
        #expect(endpoint.description == text)
        #expect(try PeerEndpoint(parsing: endpoint.description) == endpoint)
    }

    @Test(arguments: [
        "laptop", "laptop:", ":7001", "laptop:0", "laptop:65536", "laptop:70000000000", "laptop:abc",
        "laptop:+1", "fe80::1:7001", "[fe80::1]7001", "[fe80::1:7001", "a b:1", "a/b:1", "[]:1",
        String(repeating: "a", count: 254) + ":1",
    ])
    func rejects(text: String) {
        #expect(throws: PeerEndpointError.self) { try PeerEndpoint(parsing: text) }
    }

    @Test func errorsNameTheTextAndTheFix() {
        do {
            _ = try PeerEndpoint(parsing: "fe80::1:7001")
            Issue.record("expected an error")
        } catch {
            #expect(error.description == "'fe80::1:7001' is not a usable peer address: an IPv6 address must be written [address]:port")
        }
    }
}
