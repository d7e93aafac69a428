/// The replica's schema, one migration per `user_version` step. Never edit a shipped
/// migration: add the next one, and change `current` to match it (`SchemaTests` fails until
/// they agree).
enum Schema {
    static let migrations: [Migration] = [
        // 1: the revision DAG, blocks, log, version vector, heads and materialised state.
        """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value BLOB NOT NULL
        ) WITHOUT ROWID;

        -- Block contents, stored once by hash. `refs` counts the revisions whose body uses the
        -- block (each revision once), so purging and coalescing free blocks exactly.
        -- Rowid tables with a unique hash: rows are appended in arrival order, so a catch-up
        -- writes new pages instead of rewriting a b-tree clustered on random hashes.
        CREATE TABLE blocks (
            hash BLOB NOT NULL UNIQUE,
            refs INTEGER NOT NULL,
            data BLOB NOT NULL
        );

        -- Immutable revisions. `parents` and `body` repeat what `data` encodes (concatenated
        -- 32-byte ids) so DAG walks and block bookkeeping need no decoding. A purged revision
        -- keeps its place in the DAG but not its content: `data` is empty and `purged` is 1.
        CREATE TABLE revisions (
            id BLOB NOT NULL UNIQUE,
            record BLOB NOT NULL,
            kind INTEGER NOT NULL,
            hlc INTEGER NOT NULL,
            author BLOB NOT NULL,
            parents BLOB NOT NULL,
            body BLOB NOT NULL,
            tombstone INTEGER NOT NULL,
            purged INTEGER NOT NULL DEFAULT 0,
            data BLOB NOT NULL
        );
        CREATE INDEX revisions_by_record ON revisions(record);

        -- The log: entry (replica, seq) names a revision; `stored` is the local storage order,
        -- which is a topological order (parents first) and per-replica contiguous.
        CREATE TABLE log (
            stored INTEGER PRIMARY KEY,
            replica BLOB NOT NULL,
            seq INTEGER NOT NULL,
            revision BLOB NOT NULL REFERENCES revisions(id),
            UNIQUE (replica, seq)
        );
        CREATE INDEX log_by_revision ON log(revision);

        -- Highest contiguous seq held per replica.
        CREATE TABLE vector (
            replica BLOB PRIMARY KEY,
            seq INTEGER NOT NULL
        ) WITHOUT ROWID;

        -- The revisions of each record that have no children.
        CREATE TABLE heads (
            record BLOB NOT NULL,
            revision BLOB NOT NULL REFERENCES revisions(id),
            kind INTEGER NOT NULL,
            PRIMARY KEY (record, revision)
        ) WITHOUT ROWID;

        -- Materialised current state: the deterministic merge of each record's heads.
        -- Tombstoned records have no row here (their heads remain).
        CREATE TABLE notes (
            id BLOB PRIMARY KEY,
            title TEXT NOT NULL,
            body BLOB NOT NULL,
            folder BLOB,
            trashed INTEGER NOT NULL,
            pinned INTEGER NOT NULL,
            color TEXT,
            created INTEGER NOT NULL,
            modified INTEGER NOT NULL,
            conflict_of BLOB,
            hlc INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE note_tags (
            note BLOB NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (note, tag)
        ) WITHOUT ROWID;
        CREATE INDEX note_tags_by_tag ON note_tags(tag);
        CREATE TABLE folders (
            id BLOB PRIMARY KEY,
            name TEXT NOT NULL,
            parent BLOB,
            moved_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE devices (
            id BLOB PRIMARY KEY,
            name TEXT NOT NULL,
            public_key BLOB NOT NULL,
            revoked INTEGER NOT NULL,
            added INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 2: what this device knows about each peer, for `notesctl status` across restarts.
        """
        CREATE TABLE peers (
            peer TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            address TEXT,
            replica BLOB,
            vector BLOB,
            status TEXT NOT NULL,
            last_success INTEGER,
            last_error TEXT,
            last_error_at INTEGER,
            retries INTEGER NOT NULL DEFAULT 0,
            entries_behind INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        """,
        // 3: pairing invites (local, never synced) and addresses added with `notesctl connect`.
        """
        CREATE TABLE invites (
            secret_id TEXT PRIMARY KEY,
            secret BLOB NOT NULL,
            created INTEGER NOT NULL,
            expires INTEGER NOT NULL,
            used_by BLOB
        ) WITHOUT ROWID;
        CREATE TABLE static_peers (
            address TEXT PRIMARY KEY,
            added INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 4: what lets a request cost what it touches, not the library (docs/benchmarks.md,
        // "Cost that grows with the library"): counts kept by triggers (`status`, folder
        // listings), folder lookups by name and parent, the listing order as an index (a page
        // of `notes.list` reads only its rows), and heads by revision.
        """
        CREATE TABLE folder_note_counts (
            folder BLOB PRIMARY KEY,
            notes INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO folder_note_counts (folder, notes)
            SELECT folder, count(*) FROM notes WHERE trashed = 0 AND folder IS NOT NULL GROUP BY folder;
        INSERT INTO meta (key, value) VALUES ('note_count', (SELECT count(*) FROM notes))
            ON CONFLICT(key) DO UPDATE SET value = excluded.value;
        -- An upsert that updates fires the UPDATE trigger, not the INSERT one.
        CREATE TRIGGER notes_counted_on_insert AFTER INSERT ON notes BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'note_count';
            INSERT INTO folder_note_counts (folder, notes) SELECT NEW.folder, 1 WHERE NEW.folder IS NOT NULL AND NEW.trashed = 0
                ON CONFLICT(folder) DO UPDATE SET notes = notes + 1;
        END;
        CREATE TRIGGER notes_counted_on_delete AFTER DELETE ON notes BEGIN
            UPDATE meta SET value = value - 1 WHERE key = 'note_count';
            UPDATE folder_note_counts SET notes = notes - 1 WHERE OLD.trashed = 0 AND folder = OLD.folder;
        END;
        CREATE TRIGGER notes_counted_on_update AFTER UPDATE OF folder, trashed ON notes
        WHEN OLD.folder IS NOT NEW.folder OR OLD.trashed != NEW.trashed BEGIN
            UPDATE folder_note_counts SET notes = notes - 1 WHERE OLD.trashed = 0 AND folder = OLD.folder;
            INSERT INTO folder_note_counts (folder, notes) SELECT NEW.folder, 1 WHERE NEW.folder IS NOT NULL AND NEW.trashed = 0
                ON CONFLICT(folder) DO UPDATE SET notes = notes + 1;
        END;
        CREATE INDEX folders_by_name ON folders(name);
        CREATE INDEX folders_by_parent ON folders(parent);
        CREATE INDEX notes_in_list_order ON notes(trashed, pinned, modified, id);
        -- Deleting a revision (a coalesced edit replaces its head) looks up the heads naming
        -- it, for itself and for the foreign key: without this, a scan of every record's heads.
        CREATE INDEX heads_by_revision ON heads(revision);
        """,
        // 5 (web): full-text search over title and body text (docs/web.md, "Search"), kept
        // in the transaction that materialises each note; `search_index = 0` asks
        // `Replica.init` to index the notes a library already had. And the web app's
        // sessions (hashes only; local, never synced).
        """
        CREATE VIRTUAL TABLE note_search USING fts5(
            note UNINDEXED, title, body,
            tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
        );
        CREATE TABLE note_search_docs (
            note BLOB PRIMARY KEY,
            doc INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO meta (key, value) VALUES ('search_index', 0);
        -- Notes materialised during a catch-up, indexed right after it (Replica+Web).
        CREATE TABLE search_pending (
            note BLOB PRIMARY KEY
        ) WITHOUT ROWID;
        CREATE TABLE web_sessions (
            hash TEXT PRIMARY KEY,
            created INTEGER NOT NULL,
            last_used INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 6: peer columns written and never read. The session state is live only (a stored
        // one was always "offline" by the next start), and what a peer is behind comes from
        // its last-seen version vector.
        """
        ALTER TABLE peers DROP COLUMN status;
        ALTER TABLE peers DROP COLUMN entries_behind;
        """,
        // 7: each peer's notesd version as its handshake last gave it (HandshakeInfo).
        """
        ALTER TABLE peers ADD COLUMN software TEXT;
        """,
        // 8: history that costs what changed (docs/decisions.md, "History storage").
        // New revision rows keep the header only in their columns and a note's body as its
        // change from the first parent's body (`RevisionStorage`; NULL `depth`: a row written
        // before this migration, whole). The log loses its index by revision and its foreign
        // key (which needed that index to delete a revision): nothing looks an entry up by
        // revision except coalescing, which reads the few own entries not yet offered.
        """
        ALTER TABLE revisions ADD COLUMN depth INTEGER;
        CREATE TABLE log_by_store (
            stored INTEGER PRIMARY KEY,
            replica BLOB NOT NULL,
            seq INTEGER NOT NULL,
            revision BLOB NOT NULL,
            UNIQUE (replica, seq)
        );
        INSERT INTO log_by_store (stored, replica, seq, revision) SELECT stored, replica, seq, revision FROM log;
        DROP TABLE log;
        ALTER TABLE log_by_store RENAME TO log;
        """,
        // 9: household key rotation (docs/security.md, "Key rotation"): each rotated key
        // sealed to each member, and which members hold which key. Grow-only sets gossiped
        // between devices that use the `key-rotation` feature, outside the replicated log.
        """
        CREATE TABLE key_grants (
            fingerprint BLOB NOT NULL,
            epoch INTEGER NOT NULL,
            member BLOB NOT NULL,
            sealed BLOB NOT NULL,
            PRIMARY KEY (fingerprint, member)
        ) WITHOUT ROWID;
        CREATE TABLE key_holdings (
            member BLOB NOT NULL,
            fingerprint BLOB NOT NULL,
            epoch INTEGER NOT NULL,
            PRIMARY KEY (member, fingerprint)
        ) WITHOUT ROWID;
        """,
        // 10: the blocks' index no longer keyed by a hash alone, the largest random index a
        // catch-up or an import wrote (docs/decisions.md, "Blocks keyed by record"; the
        // revisions' unique id is still random). Blocks are keyed by the record whose
        // revisions use them, then hash: record ids are UUIDv7, so new notes append to the
        // index instead of landing on random pages of it (which every commit then rewrote, so
        // the bytes written grew with the square of the library). A block two notes share is
        // stored once per note. Heads lose their index by revision (and the foreign key that
        // needed it): every statement on heads names the record. The blocks' references are
        // counted again per record in Swift (`Replica.keyBlocksByRecord`).
        Migration(
            """
            ALTER TABLE blocks RENAME TO blocks_by_hash;
            CREATE TABLE blocks (
                record BLOB NOT NULL,
                hash BLOB NOT NULL,
                refs INTEGER NOT NULL,
                data BLOB NOT NULL,
                UNIQUE (record, hash)
            );
            CREATE TABLE heads_by_record (
                record BLOB NOT NULL,
                revision BLOB NOT NULL,
                kind INTEGER NOT NULL,
                PRIMARY KEY (record, revision)
            ) WITHOUT ROWID;
            INSERT INTO heads_by_record (record, revision, kind) SELECT record, revision, kind FROM heads;
            DROP TABLE heads;
            ALTER TABLE heads_by_record RENAME TO heads;
            """,
            then: Replica.keyBlocksByRecord),
        // 11: the listing-order index carries what a listing shows (title, folder, colour,
        // times, conflict origin), so a listing reads the index alone: a page or every note
        // costs no lookup into the table, whose rows also hold each note's block list (four
        // fifths of its pages). docs/decisions.md, "Listing answers written directly".
        """
        DROP INDEX notes_in_list_order;
        CREATE INDEX notes_in_list_order ON notes(trashed, pinned, modified, id, title, folder, color, created, conflict_of);
        """,
        // 12: blocks stored in their (record, hash) key's own b-tree, not in a rowid table
        // beside a unique index of that key: nothing reads a block by rowid, so each block
        // written costs one b-tree insert instead of two, and the library loses the index's
        // pages (docs/decisions.md, "Blocks in their key's b-tree").
        """
        CREATE TABLE blocks_keyed (
            record BLOB NOT NULL,
            hash BLOB NOT NULL,
            refs INTEGER NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (record, hash)
        ) WITHOUT ROWID;
        INSERT INTO blocks_keyed (record, hash, refs, data) SELECT record, hash, refs, data FROM blocks ORDER BY record, hash;
        DROP TABLE blocks;
        ALTER TABLE blocks_keyed RENAME TO blocks;
        """,
        // 13: the note counts kept by the replica as it writes notes, stored once per
        // transaction, instead of by triggers on every row (docs/decisions.md, "Note counts
        // kept by the replica"); counted again from the notes, as migration 4 first did.
        """
        DROP TRIGGER IF EXISTS notes_counted_on_insert;
        DROP TRIGGER IF EXISTS notes_counted_on_delete;
        DROP TRIGGER IF EXISTS notes_counted_on_update;
        DELETE FROM folder_note_counts;
        INSERT INTO folder_note_counts (folder, notes)
            SELECT folder, count(*) FROM notes WHERE trashed = 0 AND folder IS NOT NULL GROUP BY folder;
        INSERT INTO meta (key, value) VALUES ('note_count', (SELECT count(*) FROM notes))
            ON CONFLICT(key) DO UPDATE SET value = excluded.value;
        """,
        // 14: revisions found by record and id, never by id alone (docs/decisions.md,
        // "Revisions keyed by record"). The unique index on `id` alone was the last index a
        // catch-up wrote at random pages of (ids are hashes); one index on (record, id)
        // replaces it and the index on `record`, and appends, as record ids are UUIDv7. Every
        // lookup names the record: an entry carries it, a revision's parents are of its record,
        // and the log now keeps each entry's record. A log entry naming a revision that is not
        // stored (a damaged library) keeps an empty record, for the integrity check to report.
        """
        CREATE TABLE log_keyed (
            stored INTEGER PRIMARY KEY,
            replica BLOB NOT NULL,
            seq INTEGER NOT NULL,
            record BLOB NOT NULL,
            revision BLOB NOT NULL,
            UNIQUE (replica, seq)
        );
        INSERT INTO log_keyed (stored, replica, seq, record, revision)
            SELECT l.stored, l.replica, l.seq, ifnull(r.record, x''), l.revision FROM log l LEFT JOIN revisions r ON r.id = l.revision;
        DROP TABLE log;
        ALTER TABLE log_keyed RENAME TO log;
        CREATE TABLE revisions_keyed (
            id BLOB NOT NULL,
            record BLOB NOT NULL,
            kind INTEGER NOT NULL,
            hlc INTEGER NOT NULL,
            author BLOB NOT NULL,
            parents BLOB NOT NULL,
            body BLOB NOT NULL,
            tombstone INTEGER NOT NULL,
            purged INTEGER NOT NULL DEFAULT 0,
            data BLOB NOT NULL,
            depth INTEGER
        );
        INSERT INTO revisions_keyed (id, record, kind, hlc, author, parents, body, tombstone, purged, data, depth)
            SELECT id, record, kind, hlc, author, parents, body, tombstone, purged, data, depth FROM revisions ORDER BY rowid;
        DROP TABLE revisions;
        ALTER TABLE revisions_keyed RENAME TO revisions;
        CREATE UNIQUE INDEX revisions_by_record ON revisions(record, id);
        """,
        // 15: the search index merges its segments eight at a time instead of four
        // (docs/decisions.md, "The search index merges eight segments at a time"): indexing
        // the notes a catch-up brought writes each entry fewer times, for searches as fast.
        // FTS5 keeps the setting in its own configuration table.
        """
        INSERT INTO note_search (note_search, rank) VALUES ('automerge', 8);
        """,
        // 16: blocks stored a revision's worth to a row (docs/decisions.md, "Blocks stored a
        // revision's worth to a row"): a note's first revision writes one row for its blocks
        // instead of one per block, which SQLite charged about the same whatever the row's size.
        // `revision`: the revision whose new blocks made the pack (NULL for a pack of one block
        // split from one whose revision is gone, or that the merge composed, or migrated);
        // `refs`: the revisions using at least one of its blocks; `directory` before `data`, so
        // finding a block reads the data of its own pack only (`BlockPack`). Each block row
        // becomes a pack of one block, whose directory is its hash alone and whose data is the
        // block.
        """
        CREATE TABLE block_packs (
            record BLOB NOT NULL,
            revision BLOB,
            refs INTEGER NOT NULL,
            directory BLOB NOT NULL,
            data BLOB NOT NULL
        );
        INSERT INTO block_packs (record, revision, refs, directory, data)
            SELECT record, NULL, refs, hash, data FROM blocks ORDER BY record, hash;
        DROP TABLE blocks;
        CREATE INDEX block_packs_by_record ON block_packs(record);
        """,
    ]

    /// The schema `migrations` leave, made in one step for a new library (docs/decisions.md,
    /// "A new library made at the current schema"): running the sixteen steps, each creating
    /// and then reshaping tables an empty file does not need, was about 20 ms of a new
    /// device's start, most of it SQLite parsing statements. `SchemaTests` checks that a
    /// library made so and one migrated step by step have the same tables, columns, indexes,
    /// triggers and rows: a new migration must change this too.
    static let current = Migration(
        """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value BLOB NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE vector (
            replica BLOB PRIMARY KEY,
            seq INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE notes (
            id BLOB PRIMARY KEY,
            title TEXT NOT NULL,
            body BLOB NOT NULL,
            folder BLOB,
            trashed INTEGER NOT NULL,
            pinned INTEGER NOT NULL,
            color TEXT,
            created INTEGER NOT NULL,
            modified INTEGER NOT NULL,
            conflict_of BLOB,
            hlc INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE note_tags (
            note BLOB NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (note, tag)
        ) WITHOUT ROWID;
        CREATE INDEX note_tags_by_tag ON note_tags(tag);
        CREATE TABLE folders (
            id BLOB PRIMARY KEY,
            name TEXT NOT NULL,
            parent BLOB,
            moved_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE devices (
            id BLOB PRIMARY KEY,
            name TEXT NOT NULL,
            public_key BLOB NOT NULL,
            revoked INTEGER NOT NULL,
            added INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE peers (
            peer TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            address TEXT,
            replica BLOB,
            vector BLOB,
            last_success INTEGER,
            last_error TEXT,
            last_error_at INTEGER,
            retries INTEGER NOT NULL DEFAULT 0,
            software TEXT
        ) WITHOUT ROWID;
        CREATE TABLE invites (
            secret_id TEXT PRIMARY KEY,
            secret BLOB NOT NULL,
            created INTEGER NOT NULL,
            expires INTEGER NOT NULL,
            used_by BLOB
        ) WITHOUT ROWID;
        CREATE TABLE static_peers (
            address TEXT PRIMARY KEY,
            added INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE folder_note_counts (
            folder BLOB PRIMARY KEY,
            notes INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX folders_by_name ON folders(name);
        CREATE INDEX folders_by_parent ON folders(parent);
        CREATE VIRTUAL TABLE note_search USING fts5(
            note UNINDEXED, title, body,
            tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
        );
        CREATE TABLE note_search_docs (
            note BLOB PRIMARY KEY,
            doc INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE search_pending (
            note BLOB PRIMARY KEY
        ) WITHOUT ROWID;
        CREATE TABLE web_sessions (
            hash TEXT PRIMARY KEY,
            created INTEGER NOT NULL,
            last_used INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE key_grants (
            fingerprint BLOB NOT NULL,
            epoch INTEGER NOT NULL,
            member BLOB NOT NULL,
            sealed BLOB NOT NULL,
            PRIMARY KEY (fingerprint, member)
        ) WITHOUT ROWID;
        CREATE TABLE key_holdings (
            member BLOB NOT NULL,
            fingerprint BLOB NOT NULL,
            epoch INTEGER NOT NULL,
            PRIMARY KEY (member, fingerprint)
        ) WITHOUT ROWID;
        CREATE TABLE heads (
            record BLOB NOT NULL,
            revision BLOB NOT NULL,
            kind INTEGER NOT NULL,
            PRIMARY KEY (record, revision)
        ) WITHOUT ROWID;
        CREATE INDEX notes_in_list_order ON notes(trashed, pinned, modified, id, title, folder, color, created, conflict_of);
        CREATE TABLE log (
            stored INTEGER PRIMARY KEY,
            replica BLOB NOT NULL,
            seq INTEGER NOT NULL,
            record BLOB NOT NULL,
            revision BLOB NOT NULL,
            UNIQUE (replica, seq)
        );
        CREATE TABLE revisions (
            id BLOB NOT NULL,
            record BLOB NOT NULL,
            kind INTEGER NOT NULL,
            hlc INTEGER NOT NULL,
            author BLOB NOT NULL,
            parents BLOB NOT NULL,
            body BLOB NOT NULL,
            tombstone INTEGER NOT NULL,
            purged INTEGER NOT NULL DEFAULT 0,
            data BLOB NOT NULL,
            depth INTEGER
        );
        CREATE UNIQUE INDEX revisions_by_record ON revisions(record, id);
        CREATE TABLE block_packs (
            record BLOB NOT NULL,
            revision BLOB,
            refs INTEGER NOT NULL,
            directory BLOB NOT NULL,
            data BLOB NOT NULL
        );
        CREATE INDEX block_packs_by_record ON block_packs(record);
        INSERT INTO note_search (note_search, rank) VALUES ('automerge', 8);
        INSERT INTO meta (key, value) VALUES ('search_index', 0), ('note_count', 0);
        """)
}
