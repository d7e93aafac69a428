import Control

print("notesctl \(NotesVersion.string)")
