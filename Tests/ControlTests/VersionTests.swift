import Testing
@testable import Control
@Test func versionIsSet() { #expect(!NotesVersion.string.isEmpty) }
