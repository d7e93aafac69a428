import Merge
import Peer

/// A note of a benchmark library as the benchmark tracks it: its id (canonical text) and its
/// current body, so edits can change one paragraph of what is really stored.
struct LibraryNote {
    let id: String
    var body: [Block]
}

/// Fills a stopped daemon's database through the Replica API, all notes in one transaction:
/// the same path an import takes, and much faster than 10,000 control calls.
enum LibraryPopulation {
    static func fill(databasePath: String, with notes: [GeneratedNote]) throws -> [LibraryNote] {
        try fill(replica: try Replica(path: databasePath), with: notes)
    }

    static func fill(replica: Replica, with notes: [GeneratedNote]) throws -> [LibraryNote] {
        try replica.inOneTransaction {
            try notes.map { note in
                let body = HTMLBlocks.split(note.html)
                let id = try replica.createNote(title: note.title, body: body, now: unixMilliseconds())
                return LibraryNote(id: id.description, body: body)
            }
        }
    }
}
