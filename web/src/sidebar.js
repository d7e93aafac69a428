// The sidebar: All notes, Pinned, folders (nested, by parent), tags, Conflicts and Trash, each
// with its count. A roving tab stop: Tab enters it once, the arrow keys move, Enter opens.

import { h, replace } from './dom.js';

export class Sidebar {
  constructor(element, library, onSelect) {
    this.element = element;
    this.library = library;
    this.onSelect = onSelect;
    this.filter = { kind: 'all' };
    this.collapsed = new Set();
    element.addEventListener('keydown', (event) => this.keydown(event));
  }

  static label(filter, library) {
    switch (filter.kind) {
      case 'pinned': return 'Pinned';
      case 'trash': return 'Trash';
      case 'conflicts': return 'Conflicts';
      case 'folder': return library.folders.find((f) => f.id === filter.id)?.path ?? (filter.id === null ? 'Uncategorized' : 'Folder');
      case 'tag': return `#${filter.tag}`;
      default: return 'All notes';
    }
  }

  select(filter) {
    this.filter = filter;
    this.render();
    this.onSelect(filter);
  }

  same(a, b) {
    return a.kind === b.kind && (a.id ?? null) === (b.id ?? null) && (a.tag ?? null) === (b.tag ?? null);
  }

  entry(filter, label, count, extra = {}) {
    const current = this.same(filter, this.filter);
    return h('li', { class: extra.class ?? null },
      h('button', {
        type: 'button', class: `entry${current ? ' current' : ''}`, 'aria-current': current ? 'true' : null,
        tabindex: current ? '0' : '-1', dataset: { filter: JSON.stringify(filter) },
        onclick: () => this.select(filter),
      },
      h('span', { class: `label depth-${Math.min(extra.depth ?? 0, 6)}` }, label),
      count === null ? null : h('span', { class: `count${extra.alert && count > 0 ? ' alert' : ''}`, 'aria-label': `${count} notes` }, String(count))));
  }

  render() {
    const lib = this.library;
    // While only the first page is read, no count: a partial one would be wrong.
    const count = (n) => (lib.complete ? n : null);
    const folderCounts = new Map();
    for (const note of lib.notes) folderCounts.set(note.folder ?? null, (folderCounts.get(note.folder ?? null) ?? 0) + 1);
    const children = new Map();
    for (const folder of lib.folders) {
      const parent = folder.parent ?? null;
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(folder);
    }
    const folderItems = [];
    const walk = (parent, depth) => {
      for (const folder of (children.get(parent) ?? []).sort((a, b) => a.name.localeCompare(b.name))) {
        folderItems.push(this.entry({ kind: 'folder', id: folder.id }, folder.name, count(folderCounts.get(folder.id) ?? 0), { depth }));
        if (depth < 12) walk(folder.id, depth + 1);
      }
    };
    walk(null, 0);
    const conflicts = lib.notes.filter((n) => n.conflictOf).length;
    const tags = lib.tags();
    replace(this.element,
      h('ul', { class: 'entries', 'aria-label': 'Library' },
        this.entry({ kind: 'all' }, 'All notes', count(lib.notes.length)),
        this.entry({ kind: 'pinned' }, 'Pinned', count(lib.notes.filter((n) => n.pinned).length))),
      h('h2', { class: 'sidebar-heading', id: 'folders-heading' }, 'Folders'),
      h('ul', { class: 'entries', 'aria-labelledby': 'folders-heading' },
        folderItems,
        this.entry({ kind: 'folder', id: null }, 'Uncategorized', count(folderCounts.get(null) ?? 0))),
      tags.length ? h('h2', { class: 'sidebar-heading', id: 'tags-heading' }, 'Tags') : null,
      tags.length ? h('ul', { class: 'entries', 'aria-labelledby': 'tags-heading' }, tags.map(([tag, n]) => this.entry({ kind: 'tag', tag }, `#${tag}`, count(n)))) : null,
      h('ul', { class: 'entries bottom', 'aria-label': 'Conflicts and Trash' },
        this.entry({ kind: 'conflicts' }, 'Conflicts', count(conflicts), { alert: true }),
        this.entry({ kind: 'trash' }, 'Trash', count(lib.trashed.length))));
    if (!this.element.querySelector('[tabindex="0"]')) this.element.querySelector('button.entry')?.setAttribute('tabindex', '0');
  }

  keydown(event) {
    const buttons = [...this.element.querySelectorAll('button.entry')];
    const index = buttons.indexOf(document.activeElement);
    if (index < 0) return;
    let next = null;
    if (event.key === 'ArrowDown') next = buttons[Math.min(index + 1, buttons.length - 1)];
    else if (event.key === 'ArrowUp') next = buttons[Math.max(index - 1, 0)];
    else if (event.key === 'Home') next = buttons[0];
    else if (event.key === 'End') next = buttons[buttons.length - 1];
    if (!next) return;
    event.preventDefault();
    for (const b of buttons) b.setAttribute('tabindex', b === next ? '0' : '-1');
    next.focus();
  }
}
