// The app: signs in from `#login=TOKEN`, then wires the sidebar, list, search, editor,
// compare, history and devices screens to the API and to the live events.

import { Api, loginToken, SignedOutError } from './api.js';
import { EventStream } from './events.js';
import { Library } from './library.js';
import { Sidebar } from './sidebar.js';
import { NoteList } from './list.js';
import { Search } from './search.js';
import { NoteEditor } from './editor.js';
import { CompareView } from './compare.js';
import { HistoryView } from './history.js';
import { DevicesView } from './devices.js';
import { StatusLine } from './status.js';
import { debounce, throttle, errorMessage } from './dom.js';

const $ = (id) => document.getElementById(id);

/** Up to this many notes named by change events are read one by one; more re-read the library. */
const FEW_CHANGES = 20;

/** A row's second line: the first line of the note's text that is not its title. */
function firstLineOf(title, text) {
  return (text.split('\n').map((l) => l.trim()).find((l) => l && l !== title) ?? '').slice(0, 200);
}

class App {
  constructor() {
    this.api = new Api();
    this.library = new Library(this.api);
    this.status = new StatusLine($('status'), this.api);
    this.firstLines = new Map(); // id → {modified, line}
    this.lineQueue = [];
    this.lineWorkers = 0;
    this.screen = 'notes';
    this.list = new NoteList($('note-list'), {
      onOpen: (note, { focusEditor }) => this.openNote(note.id, { focus: focusEditor }),
      firstLine: (note) => this.firstLine(note),
    });
    this.sidebar = new Sidebar($('sidebar'), this.library, (filter) => this.filterChanged(filter));
    this.editor = new NoteEditor($('note-pane'), {
      api: this.api,
      library: this.library,
      onCompare: (noteId, copyId) => this.compare(noteId, copyId),
      onHistory: (id) => this.history(id),
      // Its own save's summary goes in at once; the change event that follows refreshes it.
      onSaved: (summary) => { if (summary) this.library.patch(summary); else this.reloadSoon(); },
    });
    this.compareView = new CompareView($('note-pane'), { api: this.api, onDone: (id) => this.afterResolve(id) });
    this.historyView = new HistoryView($('note-pane'), { api: this.api, onDone: (id) => this.openNote(id) });
    this.devices = new DevicesView($('devices-pane'), { api: this.api, onChanged: () => this.status.refresh() });
    this.search = new Search($('search'), this.api, {
      onResults: (query, hits) => { if (this.screen !== 'notes') this.showScreen('notes'); this.showResults(query, hits); },
      onClear: () => this.showList(),
      onError: (error) => this.showError(error),
    });
    // Re-reading 10,000 summaries takes a while: during a burst of events, leave the daemon
    // three times as long as the last read took before reading again.
    this.reloadSoon = throttle(() => this.reload().catch((error) => this.showError(error)), () => Math.max(150, 3 * this.library.lastReadMs));
    // Notes named by change events, brought in together (see refreshChanged).
    this.changed = new Set();
    this.refreshSoon = throttle(() => this.refreshChanged().catch((error) => this.showError(error)),
      () => (this.changed.size > FEW_CHANGES ? Math.max(150, 3 * this.library.lastReadMs) : 50));
    this.statusSoon = debounce(() => { this.status.refresh(); this.devices.refresh(); }, 250);
    this.library.onChange(() => {
      this.sidebar.render();
      if (!this.search.active) this.showList();
      this.editor.libraryChanged();
    });
    this.events = new EventStream(this.api, {
      onEvent: (type, data) => this.event(type, data),
      onState: (state) => { if (state === 'open') this.status.setOnline(true); },
      onResync: () => this.resync(),
    });
    this.api.on('offline', () => this.status.setOnline(false));
    this.api.on('online', () => { this.status.refresh(); this.editor.flush(); });
    this.api.on('signedOut', () => this.signedOut('This browser was signed out. Run `notesctl ui` to sign in again.'));
    this.bindUI();
  }

  async start() {
    // A sign-in link opened in a tab that already shows the app changes only the fragment.
    window.addEventListener('hashchange', () => { if (loginToken(location.hash)) this.signInAgain(); });
    await this.signIn();
  }

  async signInAgain() {
    this.events.stop();
    document.body.dataset.ready = 'false';
    await this.signIn();
  }

  async signIn() {
    const token = loginToken(location.hash);
    if (token) {
      history.replaceState(null, '', '/');
      try {
        await this.api.login(token);
      } catch (error) {
        if (!this.api.session || !(error instanceof SignedOutError)) return this.signedOut(errorMessage(error));
      }
    }
    if (!this.api.session) return this.signedOut();
    $('signin').hidden = true;
    $('app').hidden = false;
    this.status.render();
    this.editor.close();
    this.events.start();
    try {
      await Promise.all([this.reload(), this.status.refresh()]);
    } catch (error) {
      this.showError(error);
    }
    const wanted = /^#note=([0-9a-f-]{8,})$/.exec(location.hash)?.[1];
    if (wanted && this.library.get(wanted)) this.openNote(wanted);
    document.body.dataset.ready = 'true';
  }

  signedOut(message = null) {
    this.events.stop();
    $('app').hidden = true;
    $('signin').hidden = false;
    if (message) {
      const text = $('signin-message');
      text.replaceChildren(...message.split(/`([^`]+)`/).map((piece, i) => {
        if (i % 2 === 0) return piece;
        const code = document.createElement('code');
        code.textContent = piece;
        return code;
      }));
    }
  }

  bindUI() {
    $('new-note').addEventListener('click', () => this.newNote());
    $('show-notes').addEventListener('click', () => this.showScreen('notes'));
    $('show-devices').addEventListener('click', () => this.showScreen('devices'));
    document.addEventListener('keydown', (event) => {
      const typing = event.target.closest?.('input, textarea, select, [contenteditable="true"]');
      if (event.key === '/' && !typing) { event.preventDefault(); $('search').focus(); }
      if (event.altKey && (event.key === 'n' || event.code === 'KeyN')) { event.preventDefault(); this.newNote(); }
    });
    window.addEventListener('focus', () => this.events.retryNow());
  }

  async reload() {
    await this.library.reload();
  }

  /**
   * The notes change events named, into the library: a few are read one by one (`notes.get`
   * as text, which also gives their first lines) with the folders; a burst (a sync catching
   * up), a note that is gone, or a library not yet read whole re-reads everything. Re-reading
   * 10,000 summaries for every edit another device saves would cost the daemon far more than
   * the edit.
   */
  async refreshChanged() {
    const ids = [...this.changed];
    this.changed.clear();
    if (ids.length === 0) return;
    if (ids.length > FEW_CHANGES || !this.library.complete) return this.reload();
    let docs;
    let folders;
    try {
      [folders, ...docs] = await Promise.all([
        this.api.call('folders.list', {}),
        ...ids.map((id) => this.api.call('notes.get', { id, format: 'text' })),
      ]);
    } catch (error) {
      if (error?.name === 'OfflineError') throw error;
      return this.reload(); // purged meanwhile, most likely
    }
    const summaries = docs.map((doc) => {
      this.firstLines.set(doc.id, { modified: doc.modified, line: firstLineOf(doc.title, doc.body) });
      const summary = { ...doc };
      for (const key of ['body', 'format', 'heads']) delete summary[key];
      return summary;
    });
    this.library.patch(summaries, folders);
  }

  async resync() {
    try {
      await Promise.all([this.reload(), this.status.refresh()]);
      if (this.editor.id) await this.editor.remoteChanged();
    } catch (error) {
      this.showError(error);
    }
  }

  event(type, data) {
    if (type === 'noteChanged' || type === 'conflictCopyCreated') {
      this.firstLines.delete(data?.note);
      for (const id of [data?.note, data?.copy]) if (id) this.changed.add(id);
      this.refreshSoon();
      if (data?.note && data.note === this.editor.id && this.screen === 'notes' && this.editor.view) this.editor.remoteChanged();
    }
    if (type === 'peerConnected' || type === 'peerDisconnected' || type === 'syncProgress') this.statusSoon();
  }

  showScreen(screen) {
    this.screen = screen;
    const devices = screen === 'devices';
    $('show-notes').setAttribute('aria-pressed', String(!devices));
    $('show-devices').setAttribute('aria-pressed', String(devices));
    $('devices-pane').hidden = !devices;
    $('list-pane').hidden = devices;
    $('note-pane').hidden = devices;
    $('app').dataset.screen = screen;
    if (devices) {
      this.editor.flush();
      this.devices.show().then(() => $('devices-pane').querySelector('button, input')?.focus()).catch((error) => this.showError(error));
    }
  }

  filterChanged(filter) {
    if (this.screen !== 'notes') this.showScreen('notes');
    $('search').value = '';
    this.showList();
    $('note-list').focus();
    void filter;
  }

  showList() {
    const filter = this.sidebar.filter;
    const notes = this.library.filtered(filter);
    $('list-heading').textContent = this.library.complete ? `${Sidebar.label(filter, this.library)} · ${notes.length}` : Sidebar.label(filter, this.library);
    this.list.show(notes.map((note) => ({ note })), filter.kind === 'trash' ? 'The Trash is empty.' : filter.kind === 'conflicts' ? 'No conflicts: every device agreed.' : 'No notes here yet.');
  }

  showResults(query, hits) {
    $('list-heading').textContent = `Search “${query}” · ${hits.length}`;
    this.list.show(hits.map((hit) => ({ note: hit.note, snippet: hit.snippet })), `Nothing matches “${query}”.`);
  }

  showError(error) {
    if (error?.name === 'OfflineError') return this.status.setOnline(false);
    const status = $('status');
    status.dataset.tone = 'bad';
    status.textContent = errorMessage(error);
  }

  /** The first line of a note's text for its row: cached, fetched a few at a time for visible rows only. */
  firstLine(note) {
    const cached = this.firstLines.get(note.id);
    if (cached && cached.modified === note.modified) return cached.line;
    if (!this.lineQueue.includes(note.id)) this.lineQueue.push(note.id);
    this.pumpLines();
    return cached?.line ?? null;
  }

  pumpLines() {
    while (this.lineWorkers < 4 && this.lineQueue.length > 0) {
      const id = this.lineQueue.shift();
      this.lineWorkers += 1;
      this.api.call('notes.get', { id, format: 'text' }).then((doc) => {
        this.firstLines.set(id, { modified: doc.modified, line: firstLineOf(doc.title, doc.body) });
        this.list.refreshRow(id);
      }).catch(() => {}).finally(() => {
        this.lineWorkers -= 1;
        this.pumpLines();
      });
    }
    // Rows scrolled away no longer need their line.
    if (this.lineQueue.length > 40) this.lineQueue.splice(0, this.lineQueue.length - 40);
  }

  async openNote(id, { focus = false } = {}) {
    if (this.screen !== 'notes') this.showScreen('notes');
    try {
      await this.editor.open(id, { focus });
      this.list.setOpen(id);
      history.replaceState(null, '', `#note=${id}`);
    } catch (error) {
      this.showError(error);
    }
  }

  async newNote() {
    try {
      await this.editor.flush();
      const filter = this.sidebar.filter;
      const params = { title: '', html: '' };
      if (filter.kind === 'folder' && filter.id) params.folder = filter.id;
      if (filter.kind === 'tag') params.tags = [filter.tag];
      if (filter.kind === 'pinned') params.pinned = true;
      const note = await this.api.call('notes.create', params);
      if (filter.kind === 'trash' || filter.kind === 'conflicts') this.sidebar.select({ kind: 'all' });
      await this.reload();
      await this.openNote(note.id);
      this.editor.title.focus();
    } catch (error) {
      this.showError(error);
    }
  }

  async compare(noteId, copyId) {
    await this.editor.flush();
    try {
      await this.compareView.show(noteId, copyId);
    } catch (error) {
      this.showError(error);
    }
  }

  async history(id) {
    await this.editor.flush();
    try {
      await this.historyView.show(id);
    } catch (error) {
      this.showError(error);
    }
  }

  async afterResolve(id) {
    await this.reload();
    await this.openNote(id);
  }
}

const app = new App();
window.notesdApp = app;
app.start();
