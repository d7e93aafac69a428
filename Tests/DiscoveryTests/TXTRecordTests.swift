import Testing
@testable import Discovery
