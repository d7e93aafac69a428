import Testing
@testable import Discovery
@Test func discoveryModuleLinks() { _ = DiscoveryModule.self }
