// A note's history: every revision (time, device, what changed), any one viewable, and
// restoring one in place — the note takes that revision's title and text as a new edit, so
// the history keeps everything that came after it too.

import { h, replace, formatTime } from './dom.js';
import { sanitizeHTML } from './sanitize.js';

const CHANGE_WORDS = {
  created: 'created', title: 'title', body: 'text', folder: 'folder', tags: 'tags', pinned: 'pin', color: 'colour',
  trashed: 'moved to Trash', restored: 'restored', merged: 'merged', deleted: 'deleted',
};

export class HistoryView {
  constructor(pane, { api, onDone }) {
    this.pane = pane;
    this.api = api;
    this.onDone = onDone;
  }

  async show(id) {
    const [note, entries] = await Promise.all([this.api.call('notes.get', { id }), this.api.call('notes.history', { id })]);
    this.note = note;
    this.entries = entries;
    this.preview = h('div', { class: 'history-preview prose', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Choose a revision to see it.'));
    this.actions = h('div', { class: 'history-actions' });
    const list = h('ol', { class: 'history-list', 'aria-label': 'Revisions, newest first' },
      entries.map((entry, i) => h('li', {},
        h('button', { type: 'button', class: 'revision', onclick: (event) => this.view(entry, event.currentTarget) },
          h('span', { class: 'when' }, formatTime(entry.time)),
          h('span', { class: 'who' }, entry.deviceName ?? 'an unknown device'),
          h('span', { class: 'what' }, entry.changes.map((c) => CHANGE_WORDS[c] ?? c).join(', ')),
          i === 0 ? h('span', { class: 'badge' }, 'current') : null))));
    replace(this.pane, h('article', { class: 'history', 'aria-label': 'History' },
      h('h2', {}, `History: ${note.title || 'Untitled'}`),
      h('div', { class: 'history-actions-top' }, h('button', { type: 'button', onclick: () => this.onDone(id) }, 'Back to the note')),
      h('div', { class: 'history-layout' }, list, h('div', {}, this.actions, this.preview))));
    list.querySelector('button')?.focus();
  }

  /** A revision's note (`notes.getRevision`), or null from a notesd that cannot show old revisions. */
  async revisionBody(entry) {
    if (entry.erased) return null;
    try {
      return await this.api.call('notes.getRevision', { id: this.note.id, revision: entry.revision });
    } catch (error) {
      if (error.code === -32601) return null;
      throw error;
    }
  }

  async view(entry, button) {
    for (const b of this.pane.querySelectorAll('.revision')) b.setAttribute('aria-current', String(b === button));
    const revision = await this.revisionBody(entry);
    if (!revision) {
      replace(this.preview, h('p', {}, `${entry.title || 'Untitled'} — ${formatTime(entry.time)} on ${entry.deviceName ?? 'an unknown device'}.`),
        h('p', { class: 'muted' }, entry.erased
          ? 'The text of this revision was erased by a permanent delete.'
          : 'This notesd cannot show the text of old revisions (it has no notes.getRevision); the list is what it records.'));
      replace(this.actions);
      return;
    }
    const template = document.createElement('template');
    template.innerHTML = sanitizeHTML(revision.body ?? '');
    replace(this.preview, h('h3', {}, revision.title || 'Untitled'), template.content);
    replace(this.actions, h('button', {
      type: 'button', class: 'primary',
      onclick: async () => {
        await this.api.call('notes.restoreRevision', { id: this.note.id, revision: entry.revision });
        this.onDone(this.note.id);
      },
    }, 'Restore this version'));
  }
}
