// The note list: pinned first, newest first (notes.list's order), each row its title, first
// line, folder and time. Only the rows in view (and a few either side) exist in the DOM, so
// 10,000 notes cost what 20 do. Keyboard: the list is one tab stop (a listbox); the arrows,
// Page Up/Down, Home and End move, Enter opens.

import { h, replace, formatTime } from './dom.js';
import { snippetHTML } from './sanitize.js';

export const ROW_HEIGHT = 68;
const OVERSCAN = 6;

export class NoteList {
  constructor(element, { onOpen, firstLine }) {
    this.element = element;
    this.onOpen = onOpen;
    this.firstLine = firstLine; // (note) => string | null, may fetch and call this.refreshRow later
    this.items = [];            // [{note, snippet?}]
    this.active = 0;
    this.openId = null;
    this.spacer = h('div', { class: 'spacer' });
    this.empty = h('p', { class: 'empty' });
    element.append(this.spacer);
    this.rows = new Map();      // index → element
    element.addEventListener('scroll', () => this.paint(), { passive: true });
    element.addEventListener('keydown', (event) => this.keydown(event));
    element.addEventListener('focus', () => this.paint());
    new ResizeObserver(() => this.paint()).observe(element);
  }

  /** Shows `items`; keeps the open note active when it is still there. */
  show(items, emptyText = 'No notes here.') {
    this.items = items;
    const openIndex = items.findIndex((item) => item.note.id === this.openId);
    this.active = openIndex >= 0 ? openIndex : Math.min(this.active, Math.max(items.length - 1, 0));
    this.spacer.style.height = `${items.length * ROW_HEIGHT}px`;
    this.empty.textContent = emptyText;
    if (items.length === 0) this.element.append(this.empty); else this.empty.remove();
    for (const row of this.rows.values()) row.remove();
    this.rows.clear();
    this.paint();
  }

  setOpen(id) {
    this.openId = id;
    const index = this.items.findIndex((item) => item.note.id === id);
    if (index >= 0) this.active = index;
    for (const [i, row] of this.rows) this.decorate(row, i);
    this.updateActive();
  }

  paint() {
    const height = this.element.clientHeight || 600;
    const first = Math.max(0, Math.floor(this.element.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.items.length - 1, Math.ceil((this.element.scrollTop + height) / ROW_HEIGHT) + OVERSCAN);
    for (const [index, row] of this.rows) {
      if (index < first || index > last) { row.remove(); this.rows.delete(index); }
    }
    for (let index = first; index <= last; index += 1) {
      if (!this.rows.has(index)) {
        const row = this.row(index);
        this.rows.set(index, row);
        this.element.append(row);
      }
    }
    this.updateActive();
  }

  row(index) {
    const { note, snippet } = this.items[index];
    const line = snippet ? null : this.firstLine(note);
    const secondLine = h('span', { class: 'line' });
    if (snippet) {
      // The snippet is escaped first, then only <mark> is added (sanitize.js).
      const template = document.createElement('template');
      template.innerHTML = snippetHTML(snippet);
      secondLine.append(template.content);
    } else {
      secondLine.textContent = line ?? '';
    }
    const row = h('div', {
      class: 'row', role: 'option', id: `row-${note.id}`, dataset: { id: note.id, index: String(index) },
      onclick: () => { this.active = index; this.onOpen(note, { focusEditor: false }); },
    },
    h('span', { class: 'title-line' },
      note.color ? h('span', { class: `swatch color-${colorClass(note.color)}`, 'aria-label': `colour ${note.color}` }) : null,
      note.pinned ? h('span', { class: 'pin', 'aria-label': 'pinned' }, '📌') : null,
      h('span', { class: 'title' }, note.title || 'Untitled'),
      note.conflictOf ? h('span', { class: 'badge' }, 'other version') : null),
    secondLine,
    h('span', { class: 'meta' },
      h('span', { class: 'folder' }, note.folderPath || 'Uncategorized'),
      h('time', { datetime: new Date(note.modified).toISOString() }, formatTime(note.modified))));
    row.style.transform = `translateY(${index * ROW_HEIGHT}px)`;
    this.decorate(row, index);
    return row;
  }

  decorate(row, index) {
    const isOpen = this.items[index]?.note.id === this.openId;
    row.classList.toggle('open', isOpen);
    row.setAttribute('aria-selected', String(isOpen));
  }

  /** Redraws the row of note `id` (its first line arrived). */
  refreshRow(id) {
    for (const [index, row] of this.rows) {
      if (this.items[index]?.note.id === id) {
        const fresh = this.row(index);
        row.replaceWith(fresh);
        this.rows.set(index, fresh);
      }
    }
    this.updateActive();
  }

  updateActive() {
    for (const [index, row] of this.rows) row.classList.toggle('active', index === this.active);
    const item = this.items[this.active];
    if (item && this.rows.has(this.active)) this.element.setAttribute('aria-activedescendant', `row-${item.note.id}`);
    else this.element.removeAttribute('aria-activedescendant');
  }

  moveTo(index) {
    if (this.items.length === 0) return;
    this.active = Math.max(0, Math.min(this.items.length - 1, index));
    const top = this.active * ROW_HEIGHT;
    if (top < this.element.scrollTop) this.element.scrollTop = top;
    else if (top + ROW_HEIGHT > this.element.scrollTop + this.element.clientHeight) this.element.scrollTop = top + ROW_HEIGHT - this.element.clientHeight;
    this.paint();
  }

  keydown(event) {
    const page = Math.max(1, Math.floor(this.element.clientHeight / ROW_HEIGHT) - 1);
    const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page };
    if (event.key in moves) { event.preventDefault(); this.moveTo(this.active + moves[event.key]); }
    else if (event.key === 'Home') { event.preventDefault(); this.moveTo(0); }
    else if (event.key === 'End') { event.preventDefault(); this.moveTo(this.items.length - 1); }
    else if (event.key === 'Enter' || event.key === ' ') {
      const item = this.items[this.active];
      if (item) { event.preventDefault(); this.onOpen(item.note, { focusEditor: event.key === 'Enter' }); }
    }
  }
}

/** The CSS class for a note colour: the names the app offers, anything else as "other". */
export function colorClass(color) {
  const known = ['red', 'orange', 'yellow', 'green', 'blue', 'purple', 'gray'];
  return known.includes(color) ? color : 'other';
}

export const COLORS = ['red', 'orange', 'yellow', 'green', 'blue', 'purple', 'gray'];
