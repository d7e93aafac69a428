// What the sidebar and the list show: every note's summary and every folder, read with
// `notes.list` and `folders.list` and read again (coalesced) when events say something changed.
// The first read starts with one page of notes, so the list shows before a library of 10,000
// has been read (its counts follow with the rest).

/** Notes in the first page: a few screens of rows. */
export const FIRST_PAGE = 100;

export class Library {
  constructor(api) {
    this.api = api;
    this.notes = [];      // not in the Trash, pinned first then newest first (notes.list order)
    this.trashed = [];
    this.folders = [];
    this.byId = new Map();
    this.listeners = new Set();
    this.loading = null;
    this.again = false;
    this.loaded = false;
    this.complete = false; // every note and the Trash read (counts are true)
    this.lastReadMs = 0;
  }

  onChange(listener) { this.listeners.add(listener); }

  /** Reads everything again; calls made while a read is running share one more read after it. */
  async reload() {
    if (this.loading) { this.again = true; return this.loading; }
    this.loading = (async () => {
      if (!this.loaded) await this.readFirstPage();
      do {
        this.again = false;
        const started = performance.now();
        const [notes, trashed, folders] = await Promise.all([
          this.api.call('notes.list', {}),
          this.api.call('notes.list', { trashed: true }),
          this.api.call('folders.list', {}),
        ]);
        this.notes = notes;
        this.trashed = trashed;
        this.folders = folders;
        this.byId = new Map([...notes, ...trashed].map((n) => [n.id, n]));
        this.loaded = true;
        this.complete = true;
        this.lastReadMs = performance.now() - started;
        for (const listener of this.listeners) listener();
      } while (this.again);
    })();
    try { await this.loading; } finally { this.loading = null; }
  }

  /** The first page of notes (in `notes.list` order) and the folders, shown while the rest is read. */
  async readFirstPage() {
    const [notes, folders] = await Promise.all([
      this.api.call('notes.list', { limit: FIRST_PAGE }),
      this.api.call('folders.list', {}),
    ]);
    this.notes = notes;
    this.folders = folders;
    this.byId = new Map(notes.map((n) => [n.id, n]));
    this.loaded = true;
    for (const listener of this.listeners) listener();
  }

  get(id) { return this.byId.get(id) ?? null; }

  /**
   * Puts summaries the app just got (from its own save, or read after a change event) in
   * place at once, in notes.list order; `folders`, when given, replaces the folder list.
   */
  patch(summaries, folders = null) {
    const list = Array.isArray(summaries) ? summaries : [summaries];
    const ids = new Set(list.map((s) => s.id));
    const without = (notes) => notes.filter((n) => !ids.has(n.id));
    this.notes = without(this.notes);
    this.trashed = without(this.trashed);
    for (const summary of list) {
      (summary.trashed ? this.trashed : this.notes).push(summary);
      this.byId.set(summary.id, summary);
    }
    if (folders) this.folders = folders;
    const order = (a, b) => (b.pinned - a.pinned) || (b.modified - a.modified) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    this.notes.sort(order);
    this.trashed.sort(order);
    for (const listener of this.listeners) listener();
  }

  /** The notes a sidebar entry shows. */
  filtered(filter) {
    switch (filter.kind) {
      case 'pinned': return this.notes.filter((n) => n.pinned);
      case 'trash': return this.trashed;
      case 'conflicts': return this.notes.filter((n) => n.conflictOf);
      case 'folder': return this.notes.filter((n) => (n.folder ?? null) === filter.id);
      case 'tag': return this.notes.filter((n) => n.tags.includes(filter.tag));
      default: return this.notes;
    }
  }

  /** Every tag with how many notes carry it, sorted by name. */
  tags() {
    const counts = new Map();
    for (const note of this.notes) for (const tag of note.tags) counts.set(tag, (counts.get(tag) ?? 0) + 1);
    return [...counts.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  /** Conflict copies of `id` that are not in the Trash. */
  copiesOf(id) {
    return this.notes.filter((n) => n.conflictOf === id);
  }
}
