// The compare view for a conflict: the note and its other version side by side, block by
// block, the blocks that differ highlighted. One click keeps this version (the copy goes to the
// Trash), keeps the other (the note takes the copy's title and text; the copy goes to the
// Trash) or keeps both (the copy becomes a note of its own); per block, take the other side's.

import { h, replace, formatTime, errorMessage } from './dom.js';
import { split, join } from './htmlblocks.js';
import { diffBlocks } from './blockdoc.js';
import { sanitizeHTML } from './sanitize.js';

/** The two columns as rows: [{left: [blocks], right: [blocks], differs, hunk}]. */
export function compareRows(leftBlocks, rightBlocks) {
  const hunks = diffBlocks(leftBlocks, rightBlocks);
  const rows = [];
  let i = 0;
  let j = 0;
  hunks.forEach((hunk, index) => {
    while (i < hunk.a && j < hunk.c) rows.push({ left: [leftBlocks[i++]], right: [rightBlocks[j++]], differs: false });
    rows.push({ left: leftBlocks.slice(hunk.a, hunk.b), right: rightBlocks.slice(hunk.c, hunk.d), differs: true, hunk, index });
    i = hunk.b;
    j = hunk.d;
  });
  while (i < leftBlocks.length && j < rightBlocks.length) rows.push({ left: [leftBlocks[i++]], right: [rightBlocks[j++]], differs: false });
  return rows;
}

/** `leftBlocks` with the blocks of `hunk` replaced by the right side's. */
export function takeHunk(leftBlocks, rightBlocks, hunk) {
  return [...leftBlocks.slice(0, hunk.a), ...rightBlocks.slice(hunk.c, hunk.d), ...leftBlocks.slice(hunk.b)];
}

function render(blocks) {
  const template = document.createElement('template');
  template.innerHTML = sanitizeHTML(join(blocks));
  const cell = h('div', { class: 'prose compare-cell' });
  cell.append(template.content);
  if (blocks.length === 0) cell.append(h('p', { class: 'absent' }, '(nothing here)'));
  return cell;
}

export class CompareView {
  constructor(pane, { api, onDone }) {
    this.pane = pane;
    this.api = api;
    this.onDone = onDone;
  }

  async show(noteId, copyId) {
    const [note, copy] = await Promise.all([
      this.api.call('notes.get', { id: noteId }),
      this.api.call('notes.get', { id: copyId }),
    ]);
    const device = await copyDevice(this.api, noteId);
    this.note = note;
    this.copy = copy;
    const left = split(note.body);
    const right = split(copy.body);
    const rows = compareRows(left, right);
    const error = h('p', { class: 'form-error', role: 'alert' });
    const act = (fn) => async () => {
      try { await fn(); } catch (e) { error.textContent = errorMessage(e); }
    };
    const table = h('div', { class: 'compare-grid', role: 'table', 'aria-label': 'The two versions, block by block' },
      h('div', { class: 'compare-row head', role: 'row' },
        h('div', { role: 'columnheader' }, h('strong', {}, 'This version'), ` — ${note.title || 'Untitled'}, ${formatTime(note.modified)}`),
        h('div', { role: 'columnheader' }, h('strong', {}, `The version from ${device}`), ` — ${copy.title || 'Untitled'}, ${formatTime(copy.modified)}`)),
      rows.map((row) => h('div', { class: `compare-row${row.differs ? ' differs' : ''}`, role: 'row' },
        h('div', { role: 'cell' }, render(row.left)),
        h('div', { role: 'cell' }, render(row.right),
          row.differs ? h('button', { type: 'button', class: 'take', onclick: act(() => this.take(left, right, row.hunk)) }, 'Use this block') : null))));
    // The copy's title is the other version's with " (other version)" added by the merge.
    const titleDiffers = note.title !== originalTitle(copy.title);
    replace(this.pane, h('article', { class: 'compare', 'aria-label': 'Compare versions' },
      h('h2', {}, `Compare: ${note.title || 'Untitled'}`),
      h('p', {}, rows.some((r) => r.differs)
        ? `${rows.filter((r) => r.differs).length} ${rows.filter((r) => r.differs).length === 1 ? 'part differs' : 'parts differ'} (highlighted).${titleDiffers ? ' The titles differ too.' : ''}`
        : `The texts are the same.${titleDiffers ? ' The titles differ.' : ''}`),
      h('div', { class: 'compare-actions' },
        h('button', { type: 'button', class: 'primary', onclick: act(() => this.keepThis()) }, 'Keep this version'),
        h('button', { type: 'button', onclick: act(() => this.keepOther()) }, 'Keep the other version'),
        h('button', { type: 'button', onclick: act(() => this.keepBoth()) }, 'Keep both'),
        h('button', { type: 'button', onclick: () => this.onDone(noteId) }, 'Close')),
      error,
      table));
    this.pane.querySelector('.compare-actions button')?.focus();
  }

  /** This version stays; the other goes to the Trash. */
  async keepThis() {
    await this.api.call('notes.trash', { id: this.copy.id });
    this.onDone(this.note.id);
  }

  /**
   * The note takes the other version's title and text; this version goes where the other was
   * kept — into the copy, which goes to the Trash — so the version not kept can be restored
   * from the Trash like the one "Keep this version" puts there.
   */
  async keepOther() {
    const { note, copy } = this;
    await this.api.call('notes.update', { id: note.id, baseHeads: note.heads, title: originalTitle(copy.title), html: copy.body });
    await this.api.call('notes.update', { id: copy.id, baseHeads: copy.heads, title: copyTitle(note.title), html: note.body });
    await this.api.call('notes.trash', { id: copy.id });
    this.onDone(note.id);
  }

  /** Both stay: the other version becomes a note of its own (no longer marked as a copy). */
  async keepBoth() {
    const copy = this.copy;
    const made = await this.api.call('notes.create', {
      title: copy.title, html: copy.body, folder: copy.folder ?? undefined, tags: copy.tags, pinned: copy.pinned, color: copy.color ?? undefined,
    });
    await this.api.call('notes.trash', { id: copy.id });
    this.onDone(made.id);
  }

  /** Takes the other side's blocks for one differing part into this version. */
  async take(left, right, hunk) {
    const html = join(takeHunk(left, right, hunk));
    await this.api.call('notes.update', { id: this.note.id, baseHeads: this.note.heads, html });
    await this.show(this.note.id, this.copy.id);
  }
}

/** What notesd appends to a conflict copy's title (docs/merge.md). */
const COPY_SUFFIX = ' (other version)';

/** The title the other version had before the merge named it a copy (a renamed copy keeps its name). */
export function originalTitle(title) {
  if (title === COPY_SUFFIX.trim()) return '';
  return title.endsWith(COPY_SUFFIX) ? title.slice(0, -COPY_SUFFIX.length) : title;
}

/** A copy's title, as the merge writes it. */
export function copyTitle(title) {
  return title ? `${title}${COPY_SUFFIX}` : COPY_SUFFIX.trim();
}

/**
 * The device whose version a conflict copy holds, from the note's history: the copy is the
 * losing side of a merge, and the loser is the concurrent head with the earlier stamp
 * (docs/merge.md). The copy's own history cannot say: the merge made it, no device wrote it.
 */
export function loserDevice(entries) {
  const parents = new Set(entries.flatMap((e) => e.parents));
  let sides = entries.filter((e) => !parents.has(e.revision));
  if (sides.length < 2) {
    const merge = entries.find((e) => e.parents.length > 1);
    if (!merge) return null;
    sides = entries.filter((e) => merge.parents.includes(e.revision));
  }
  const stamp = (e) => e.hlc.split('.').map(Number);
  sides.sort((x, y) => {
    const [a, b] = [stamp(x), stamp(y)];
    return a[0] - b[0] || a[1] - b[1] || (x.revision < y.revision ? -1 : 1);
  });
  return sides[0]?.deviceName ?? null;
}

/** "laptop", or a generic name when the history cannot tell. */
export async function copyDevice(api, noteId) {
  try {
    return loserDevice(await api.call('notes.history', { id: noteId })) ?? 'another device';
  } catch {
    return 'another device';
  }
}
