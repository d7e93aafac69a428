import Control

print("notesd \(NotesVersion.string)")
