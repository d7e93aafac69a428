// The note editor: ProseMirror on the block-model schema (schema.js), the note's title, tags,
// folder, pin and colour edited in place, and the saving rules (docs/web-app.md, "Saving"):
//
// - saves are debounced (SAVE_DELAY_MS after typing stops), and also run on switching note,
//   closing the tab, and notesd going away (kept in localStorage until it is back);
// - every save carries the `baseHeads` of the version the editor is based on, and writes
//   untouched blocks byte for byte (blockdoc.js);
// - a change to the open note from elsewhere: unsaved typing is saved first, then the daemon's
//   merged note is brought in block by block (mergeServer), so the cursor stays put.

import { EditorState, TextSelection } from 'prosemirror-state';
import { Slice, Fragment } from 'prosemirror-model';
import { EditorView } from 'prosemirror-view';
import { schema } from './schema.js';
import { blockWindow } from './blockwindow.js';
import { OpenedNote, mergeServer, acceptableHref, pastedNodes, pastedTextNodes } from './blockdoc.js';
import {
  bindings, keymap, history, numbering, handleTextInput, toggleMark, markActive, makeHeading, makeParagraph,
  makeBullets, makeNumbered, makeChecklist, makeQuote, makeCode, insertRule, toggleChecked, undo, redo, isMac,
} from './commands.js';
import { h, replace, formatTime, errorMessage } from './dom.js';
import { COLORS } from './list.js';
import { copyDevice } from './compare.js';

export const SAVE_DELAY_MS = 400;
const UNSAVED_KEY = 'notesd.unsaved.';

export class NoteEditor {
  constructor(pane, { api, library, onStatus, onCompare, onHistory, onSaved }) {
    this.pane = pane;
    this.api = api;
    this.library = library;
    this.onStatus = onStatus;
    this.onCompare = onCompare;
    this.onHistory = onHistory;
    this.onSaved = onSaved;
    this.note = null;       // the NoteDocument last read (summary fields, heads)
    this.opened = null;     // OpenedNote: what each editor node stands for
    this.view = null;
    this.queue = Promise.resolve();
    this.timer = null;
    this.fieldChanges = {}; // title/folder/pin/colour/tag changes not yet saved
    this.saveState = 'saved';
    window.addEventListener('pagehide', () => this.flushOnExit());
    document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'hidden') this.flush(); });
    window.addEventListener('offline', () => this.saveSoon(0));
  }

  get id() { return this.note?.id ?? null; }

  // ---- Opening ---------------------------------------------------------------------------------

  /** Opens note `id`, saving the current one first. */
  async open(id, { focus = false } = {}) {
    await this.flush();
    const doc = await this.api.call('notes.get', { id });
    this.show(doc);
    await this.restoreUnsaved();
    if (focus) this.view.focus();
  }

  close() {
    this.note = null;
    this.opened = null;
    this.view?.destroy();
    this.view = null;
    replace(this.pane, h('div', { class: 'placeholder' }, h('p', {}, 'Choose a note, or make a new one with “New note”.')));
  }

  show(doc) {
    const another = this.note?.id !== doc.id;
    this.note = doc;
    this.fieldChanges = {};
    this.opened = new OpenedNote(doc.body);
    this.view?.destroy();
    this.buildChrome();
    // Another note opens at its top (the pane would keep the last note's place); the same
    // note shown again (restored, trashed) keeps it.
    if (another) this.pane.scrollTop = 0;
    const state = this.state(this.opened.doc);
    this.view = new EditorView(this.body, {
      state,
      dispatchTransaction: (tr) => this.dispatch(tr),
      handleTextInput,
      handleClickOn: (view, pos, node, nodePos, event) => {
        if (node.type === schema.nodes.list_item && event.target.classList?.contains('checkbox')) {
          toggleChecked(nodePos)(view.state, view.dispatch);
          return true;
        }
        return false;
      },
      handlePaste: (view, event) => this.paste(view, event),
      handleDrop: (view, event) => Boolean(event.dataTransfer?.files?.length),
      clipboardTextSerializer: (slice) => slice.content.textBetween(0, slice.content.size, '\n\n', '\n'),
      attributes: { class: 'prose', role: 'textbox', 'aria-multiline': 'true', 'aria-label': 'Note text', spellcheck: 'true' },
      editable: () => !this.note?.trashed,
    });
    this.setSaveState('saved');
  }

  state(doc) {
    return EditorState.create({
      doc,
      plugins: [
        // First, so that it sees every key (Ctrl+F draws the whole note) before the keymap.
        blockWindow(this.pane),
        keymap(bindings({ 'Mod-k': () => { this.editLink(); return true; }, Escape: () => { document.getElementById('note-list').focus(); return true; } })),
        history,
        numbering,
      ],
    });
  }

  // ---- Chrome (title, fields, toolbar, banners) ------------------------------------------------

  buildChrome() {
    const note = this.note;
    const mod = isMac ? '⌘' : 'Ctrl+';
    this.title = h('input', {
      class: 'title-input', type: 'text', value: note.title, placeholder: 'Untitled', 'aria-label': 'Title',
      oninput: () => { this.fieldChanges.title = this.title.value; this.saveSoon(); },
      onkeydown: (event) => { if (event.key === 'Enter' || event.key === 'ArrowDown') { event.preventDefault(); this.view.focus(); } },
    });
    const button = (label, title, command, extra = {}) => h('button', {
      type: 'button', class: 'tool', title, 'aria-label': title, ...extra,
      onmousedown: (event) => event.preventDefault(),
      onclick: () => { command(this.view.state, this.view.dispatch, this.view); this.view.focus(); },
    }, label);
    this.markButtons = [
      [button('B', `Bold (${mod}B)`, toggleMark(schema.marks.strong), { class: 'tool bold' }), schema.marks.strong],
      [button('I', `Italic (${mod}I)`, toggleMark(schema.marks.em), { class: 'tool italic' }), schema.marks.em],
      [button('S', `Strikethrough (${mod}Shift+X)`, toggleMark(schema.marks.strike), { class: 'tool strike' }), schema.marks.strike],
      [button('</>', `Code (${mod}E)`, toggleMark(schema.marks.code)), schema.marks.code],
    ];
    const toolbar = h('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Formatting' },
      this.markButtons.map(([b]) => b),
      button('Link', `Link (${mod}K)`, () => { this.editLink(); return true; }),
      h('span', { class: 'sep' }),
      button('¶', `Paragraph (${mod}Alt+0)`, makeParagraph),
      button('H1', `Heading 1 (${mod}Alt+1)`, makeHeading(1)),
      button('H2', `Heading 2 (${mod}Alt+2)`, makeHeading(2)),
      button('H3', `Heading 3 (${mod}Alt+3)`, makeHeading(3)),
      h('span', { class: 'sep' }),
      button('•', `Bullets (${mod}Shift+8)`, makeBullets),
      button('1.', `Numbers (${mod}Shift+7)`, makeNumbered),
      button('☑', `Checklist (${mod}Shift+9)`, makeChecklist),
      button('“', 'Quote', makeQuote),
      button('{ }', 'Code block', makeCode),
      button('—', 'Rule', insertRule),
      h('span', { class: 'sep' }),
      button('↶', `Undo (${mod}Z)`, undo),
      button('↷', `Redo (${mod}Shift+Z)`, redo));
    this.saveLabel = h('span', { class: 'save-state', role: 'status', 'aria-live': 'polite' });
    this.body = h('div', { class: 'editor-body' });
    this.banner = h('div', { class: 'banners' });
    this.fields = h('div', { class: 'fields' });
    this.renderFields();
    this.renderBanner();
    replace(this.pane, h('article', { class: 'note', 'aria-label': 'Note' },
      this.banner,
      h('div', { class: 'note-head' }, this.title, this.saveLabel),
      this.fields,
      note.trashed ? null : toolbar,
      this.body));
  }

  renderFields() {
    const note = { ...this.note, ...this.pendingSummary() };
    const folderSelect = h('select', {
      'aria-label': 'Folder',
      onchange: () => { this.fieldChanges.folder = folderSelect.value === '' ? null : folderSelect.value; this.saveSoon(0); },
    },
    h('option', { value: '' }, 'Uncategorized'),
    this.library.folders.map((f) => h('option', { value: f.id, selected: f.id === note.folder }, f.path)));
    const colorSelect = h('select', {
      'aria-label': 'Colour',
      onchange: () => { this.fieldChanges.color = colorSelect.value === '' ? null : colorSelect.value; this.saveSoon(0); },
    },
    h('option', { value: '' }, 'No colour'),
    [...new Set([...COLORS, ...(note.color ? [note.color] : [])])].map((c) => h('option', { value: c, selected: c === note.color }, c)));
    const pin = h('button', {
      type: 'button', class: 'toggle', 'aria-pressed': String(note.pinned),
      onclick: () => { this.fieldChanges.pinned = !(this.fieldChanges.pinned ?? this.note.pinned); this.renderFields(); this.saveSoon(0); },
    }, note.pinned ? 'Pinned' : 'Pin');
    const tags = (this.fieldChanges.tags ?? note.tags);
    const tagInput = h('input', {
      type: 'text', class: 'tag-input', placeholder: 'Add tag', 'aria-label': 'Add a tag',
      onkeydown: (event) => {
        if (event.key === 'Enter' && tagInput.value.trim()) {
          event.preventDefault();
          this.fieldChanges.tags = [...new Set([...tags, tagInput.value.trim()])].sort();
          this.renderFields();
          this.fields.querySelector('.tag-input')?.focus();
          this.saveSoon(0);
        }
      },
    });
    const chips = tags.map((tag) => h('span', { class: 'chip' }, `#${tag}`,
      h('button', {
        type: 'button', class: 'chip-remove', 'aria-label': `Remove tag ${tag}`,
        onclick: () => { this.fieldChanges.tags = tags.filter((t) => t !== tag); this.renderFields(); this.saveSoon(0); },
      }, '×')));
    const trash = this.note.trashed
      ? h('button', { type: 'button', onclick: () => this.setTrashed(false) }, 'Restore from Trash')
      : h('button', { type: 'button', onclick: () => this.setTrashed(true) }, 'Move to Trash');
    replace(this.fields,
      folderSelect, pin, colorSelect, h('span', { class: 'chips' }, chips), tagInput,
      h('span', { class: 'spacer-flex' }),
      h('button', { type: 'button', onclick: () => this.onHistory(this.note.id) }, 'History'),
      trash,
      h('span', { class: 'modified' }, `Edited ${formatTime(this.note.modified)}`));
  }

  pendingSummary() {
    const out = {};
    for (const key of ['title', 'folder', 'pinned', 'color', 'tags']) if (key in this.fieldChanges) out[key] = this.fieldChanges[key];
    return out;
  }

  /** The conflict banners: on a copy (whose version it is, and why) and on a note that has copies. */
  async renderBanner() {
    const note = this.note;
    const items = [];
    if (note.conflictOf) {
      const device = await copyDevice(this.api, note.conflictOf);
      if (this.note?.id !== note.id) return;
      items.push(h('div', { class: 'banner conflict', role: 'note' },
        h('p', {}, `This is the version from ${device}, kept because both devices changed the same paragraph.`),
        h('div', { class: 'banner-actions' },
          h('button', { type: 'button', class: 'primary', onclick: () => this.onCompare(note.conflictOf, note.id) }, 'Compare'))));
    }
    const copies = this.library.copiesOf(note.id);
    if (copies.length) {
      items.push(h('div', { class: 'banner conflict', role: 'note' },
        h('p', {}, copies.length === 1
          ? 'Another version of this note was kept: two devices changed the same paragraph at the same time.'
          : `${copies.length} other versions of this note were kept: devices changed the same paragraph at the same time.`),
        h('div', { class: 'banner-actions' },
          copies.map((copy) => h('button', { type: 'button', class: 'primary', onclick: () => this.onCompare(note.id, copy.id) },
            copies.length === 1 ? 'Compare' : `Compare with “${copy.title || 'Untitled'}”`)))));
    }
    if (note.trashed) items.push(h('div', { class: 'banner', role: 'note' }, h('p', {}, 'This note is in the Trash.')));
    replace(this.banner, items);
  }

  /** The library changed (a copy appeared, a folder was renamed): redraw what depends on it. */
  libraryChanged() {
    if (!this.note) return;
    const summary = this.library.get(this.note.id);
    if (summary && !('title' in this.fieldChanges) && document.activeElement !== this.title && summary.title !== this.title.value) {
      this.title.value = summary.title;
    }
    if (summary) Object.assign(this.note, summary);
    if (!this.fields.contains(document.activeElement)) this.renderFields();
    this.renderBanner();
  }

  async setTrashed(trashed) {
    await this.flush();
    await this.api.call(trashed ? 'notes.trash' : 'notes.restore', { id: this.note.id });
    const doc = await this.api.call('notes.get', { id: this.note.id });
    this.show(doc);
    this.onSaved();
  }

  // ---- Editing ---------------------------------------------------------------------------------

  dispatch(tr) {
    const state = this.view.state.apply(tr);
    this.view.updateState(state);
    if (tr.docChanged && !tr.getMeta('notesd-remote')) this.saveSoon();
    if (tr.docChanged || tr.selectionSet || tr.storedMarksSet) this.updateToolbar();
  }

  updateToolbar() {
    for (const [button, type] of this.markButtons ?? []) {
      const pressed = String(markActive(this.view.state, type));
      if (button.getAttribute('aria-pressed') !== pressed) button.setAttribute('aria-pressed', pressed);
    }
  }

  editLink() {
    const { state } = this.view;
    const { from, to, empty } = state.selection;
    const existing = state.doc.rangeHasMark(from, to === from ? to + 1 : to, schema.marks.link);
    const input = h('input', { type: 'url', class: 'link-input', placeholder: 'https://…', 'aria-label': 'Link address' });
    const error = h('span', { class: 'form-error', role: 'alert' });
    const done = (apply) => {
      dialog.remove();
      this.view.focus();
      if (!apply) return;
      const href = input.value.trim();
      const tr = this.view.state.tr;
      if (!href) {
        tr.removeMark(from, to, schema.marks.link);
      } else {
        const full = /^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('#') ? href : `https://${href}`;
        if (empty) tr.insertText(href, from).addMark(from, from + href.length, schema.marks.link.create({ href: full }));
        else tr.addMark(from, to, schema.marks.link.create({ href: full }));
      }
      this.view.dispatch(tr);
    };
    const dialog = h('div', { class: 'link-dialog', role: 'dialog', 'aria-label': 'Link' },
      input, error,
      h('button', { type: 'button', class: 'primary', onclick: () => submit() }, existing ? 'Change link' : 'Add link'),
      existing ? h('button', { type: 'button', onclick: () => { input.value = ''; done(true); } }, 'Remove link') : null,
      h('button', { type: 'button', onclick: () => done(false) }, 'Cancel'));
    const submit = () => {
      const href = input.value.trim();
      if (href && !acceptableHref(href) && !/^https?:/i.test(href)) { error.textContent = 'Links must be web (https://…) or mail (mailto:…) addresses.'; return; }
      done(true);
    };
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') { event.preventDefault(); submit(); }
      if (event.key === 'Escape') { event.preventDefault(); done(false); }
    });
    this.pane.querySelector('.note-head').after(dialog);
    input.focus();
  }

  /** Paste from another app: its HTML split into blocks as notesd would, each block cleaned to the model. */
  paste(view, event) {
    const html = event.clipboardData?.getData('text/html');
    const text = event.clipboardData?.getData('text/plain');
    if (view.state.selection.$from.parent.type === schema.nodes.code_block) {
      if (text) view.dispatch(view.state.tr.insertText(text).scrollIntoView());
      return true;
    }
    let nodes;
    if (html) {
      // Opaque pieces (tables, figures, …) from a paste become their text: pasted content is
      // always content the editor can save and show.
      nodes = pastedNodes(html);
    } else if (text) {
      nodes = pastedTextNodes(text);
    } else {
      return false;
    }
    if (nodes.length === 0) return true;
    const single = nodes.length === 1 && nodes[0].isTextblock;
    const slice = single
      ? new Slice(nodes[0].content, 0, 0)
      : new Slice(Fragment.from(nodes), nodes[0].isTextblock ? 1 : 0, nodes[nodes.length - 1].isTextblock ? 1 : 0);
    view.dispatch(view.state.tr.replaceSelection(slice).scrollIntoView());
    return true;
  }

  // ---- Saving ----------------------------------------------------------------------------------

  setSaveState(state, detail = '') {
    this.saveState = state;
    if (!this.saveLabel) return;
    const text = { saved: 'Saved', pending: 'Editing…', saving: 'Saving…', offline: 'Not saved yet: notesd is not running (kept in this browser)', failed: `Not saved: ${detail}` }[state];
    // Every keystroke says "Editing…": the label is only written when it changes.
    if (this.saveLabel.textContent !== text) this.saveLabel.textContent = text;
    if (this.saveLabel.dataset.state !== state) this.saveLabel.dataset.state = state;
  }

  saveSoon(delay = SAVE_DELAY_MS) {
    if (!this.note) return;
    this.setSaveState('pending');
    clearTimeout(this.timer);
    this.timer = setTimeout(() => { this.timer = null; this.flush(); }, delay);
  }

  /** Saves whatever is unsaved, now; resolves when the daemon has it (or it is kept for later). */
  flush() {
    clearTimeout(this.timer);
    this.timer = null;
    this.queue = this.queue.then(() => this.sync({ read: false })).catch(() => {});
    return this.queue;
  }

  /** Another device (or client) changed the open note: save unsaved typing, then merge theirs in. */
  remoteChanged() {
    clearTimeout(this.timer);
    this.timer = null;
    this.queue = this.queue.then(() => this.sync({ read: true })).catch(() => {});
    return this.queue;
  }

  /** The update that would save the editor now, or null when nothing is unsaved. */
  pendingUpdate() {
    if (!this.note || !this.view) return null;
    const base = this.opened.baseFor(this.view.state.doc);
    const params = { id: this.note.id, baseHeads: this.note.heads };
    const fields = this.fieldChanges;
    if ('title' in fields && fields.title !== this.note.title) params.title = fields.title;
    if ('folder' in fields && fields.folder !== (this.note.folder ?? null)) params.folder = fields.folder;
    if ('pinned' in fields && fields.pinned !== this.note.pinned) params.pinned = fields.pinned;
    if ('color' in fields && fields.color !== (this.note.color ?? null)) params.color = fields.color;
    if ('tags' in fields) {
      const add = fields.tags.filter((t) => !this.note.tags.includes(t));
      const remove = this.note.tags.filter((t) => !fields.tags.includes(t));
      if (add.length) params.addTags = add;
      if (remove.length) params.removeTags = remove;
    }
    if (base.html !== this.opened.html) params.html = base.html;
    return Object.keys(params).length > 2 ? { params, base } : null;
  }

  async sync({ read }) {
    if (!this.note) return;
    const id = this.note.id;
    const pending = this.pendingUpdate();
    if (!pending && !read) { this.setSaveState('saved'); return; }
    const sentFields = { ...this.fieldChanges };
    try {
      let summary = null;
      if (pending) {
        this.setSaveState('saving');
        this.keepUnsaved(pending.params);
        summary = await this.api.call('notes.update', pending.params);
      }
      const doc = await this.api.call('notes.get', { id });
      if (this.note?.id !== id) return;
      for (const [key, value] of Object.entries(sentFields)) {
        if (JSON.stringify(this.fieldChanges[key]) === JSON.stringify(value)) delete this.fieldChanges[key];
      }
      await this.merge(doc, pending ? pending.base : this.opened.base);
      this.dropUnsaved(id);
      // Typed while the save was under way: saved in turn.
      const typedMeanwhile = this.pendingUpdate() !== null;
      this.setSaveState(typedMeanwhile ? 'pending' : 'saved');
      if (typedMeanwhile && !this.timer) this.saveSoon();
      if (summary) this.onSaved(summary);
    } catch (error) {
      if (error.name === 'OfflineError') this.setSaveState('offline');
      else this.setSaveState('failed', errorMessage(error));
      throw error;
    }
  }

  /** Brings the daemon's version `doc` into the editor (see mergeServer). */
  async merge(doc, base) {
    const previousHeads = this.note.heads;
    const wasTitle = this.note.title;
    Object.assign(this.note, doc);
    if (!('title' in this.fieldChanges) && this.title.value !== doc.title && (document.activeElement !== this.title || wasTitle !== doc.title)) this.title.value = doc.title;
    const merged = mergeServer(this.view.state, base, doc.body);
    if (merged.conflict) {
      // The daemon changed a block the person changed too, since the last save: save the
      // person's version against the version it was typed on; the daemon's merge keeps both
      // (the other in a conflict copy) and the editor shows the result.
      const html = this.opened.htmlOf(this.view.state.doc);
      await this.api.call('notes.update', { id: doc.id, baseHeads: previousHeads, html });
      const after = await this.api.call('notes.get', { id: doc.id });
      const selection = this.view.state.selection.from;
      this.opened = new OpenedNote(after.body);
      Object.assign(this.note, after);
      const state = this.state(this.opened.doc);
      this.view.updateState(state);
      const pos = Math.min(selection, state.doc.content.size - 1);
      this.view.dispatch(this.view.state.tr.setSelection(TextSelection.near(this.view.state.doc.resolve(Math.max(pos, 0)))).setMeta('notesd-remote', true));
      return;
    }
    if (merged.tr) this.view.dispatch(merged.tr);
    this.opened = merged.opened;
    if (!this.fields.contains(document.activeElement)) this.renderFields();
  }

  // ---- Unsaved typing that outlives the tab ----------------------------------------------------

  keepUnsaved(params) {
    try { localStorage.setItem(UNSAVED_KEY + params.id, JSON.stringify(params)); } catch { /* storage full: the save itself still runs */ }
  }

  dropUnsaved(id) {
    localStorage.removeItem(UNSAVED_KEY + id);
  }

  /** A save that never reached the daemon (tab closed while it was away): send it now. */
  async restoreUnsaved() {
    const id = this.note.id;
    const kept = localStorage.getItem(UNSAVED_KEY + id);
    if (!kept) return;
    let params;
    try { params = JSON.parse(kept); } catch { this.dropUnsaved(id); return; }
    await this.api.call('notes.update', params);
    this.dropUnsaved(id);
    this.show(await this.api.call('notes.get', { id }));
  }

  /** Closing the tab or hiding it: send what is unsaved with a request that outlives the page. */
  flushOnExit() {
    const pending = this.pendingUpdate();
    if (!pending) return;
    this.keepUnsaved(pending.params);
    this.api.call('notes.update', pending.params, { keepalive: true }).catch(() => {});
  }
}

