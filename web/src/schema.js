// The editor's schema IS notesd's block model (docs/merge.md), defined here and nowhere else.
//
// The document is a flat sequence of blocks, one editor node per notesd block: a list item is
// a top-level node that carries its lists (`containers`, outermost first; the depth is their
// count), exactly as notesd keeps it, instead of ProseMirror's usual nested lists. Every node
// keeps the attributes of the element it came from (`attributes`, never rendered) and the
// source text of its start tag (`startTag`), so a block is written back as it came.
//
// What the model has and the editor can make: paragraphs (and `<div>` paragraphs), headings
// 1–3 (4–6 are kept and shown), bold, italic, strikethrough, inline code, links, bullet and
// numbered lists with nesting, checklists, quotes, code blocks, rules. What it has but the
// editor cannot edit (tables, unknown elements) is an `opaque` node holding the HTML verbatim.

import { Schema } from 'prosemirror-model';
import { sanitizeHTML, safeHref } from './sanitize.js';

const kept = { attributes: { default: [] }, startTag: { default: null } };

export const schema = new Schema({
  nodes: {
    doc: { content: 'block+' },
    paragraph: {
      group: 'block', content: 'inline*', attrs: { ...kept, division: { default: false } },
      parseDOM: [{ tag: 'p' }],
      toDOM: () => ['p', 0],
    },
    heading: {
      group: 'block', content: 'inline*', defining: true, attrs: { ...kept, level: { default: 1 } },
      toDOM: (node) => [`h${node.attrs.level}`, 0],
    },
    quote: {
      group: 'block', content: 'inline*', defining: true, attrs: kept,
      toDOM: () => ['blockquote', 0],
    },
    code_block: {
      group: 'block', content: 'text*', marks: '', code: true, defining: true,
      attrs: { ...kept, wrapCode: { default: false } },
      toDOM: () => ['pre', ['code', 0]],
    },
    rule: {
      group: 'block', atom: true, selectable: true, attrs: kept,
      toDOM: () => ['div', { class: 'rule', contenteditable: 'false' }, ['hr']],
    },
    list_item: {
      group: 'block', content: 'inline*', defining: true,
      attrs: { ...kept, containers: { default: [{ ordered: false, attributes: [], startTag: null }] }, checked: { default: null } },
      toDOM: (node) => {
        const depth = node.attrs.containers.length;
        const ordered = node.attrs.containers[depth - 1].ordered;
        const attrs = {
          class: `item depth-${Math.min(depth, 8)} ${node.attrs.checked === null ? (ordered ? 'numbered' : 'bullet') : 'check'}`,
          'data-depth': String(depth),
        };
        if (node.attrs.checked !== null) {
          attrs['data-checked'] = String(node.attrs.checked);
          return ['div', attrs,
            ['span', { class: 'checkbox', contenteditable: 'false', role: 'checkbox', 'aria-checked': String(node.attrs.checked), 'aria-label': 'Done' }],
            ['span', { class: 'item-text' }, 0]];
        }
        return ['div', attrs, ['span', { class: 'item-text' }, 0]];
      },
    },
    opaque: {
      group: 'block', atom: true, selectable: true, attrs: { html: { default: '' } },
      toDOM: (node) => {
        // Shown sanitised and read-only; saved verbatim (it is never re-serialised).
        const dom = document.createElement('div');
        dom.className = 'opaque';
        dom.contentEditable = 'false';
        dom.title = 'Kept as it was written (this editor cannot change it)';
        const template = document.createElement('template');
        template.innerHTML = sanitizeHTML(node.attrs.html);
        if (template.content.textContent.trim() === '') {
          dom.classList.add('hidden-content');
          dom.textContent = 'Something this app does not show (kept as it was)';
        } else {
          dom.append(template.content);
        }
        return dom;
      },
    },
    text: { group: 'inline' },
    hard_break: {
      inline: true, group: 'inline', selectable: false,
      toDOM: () => ['br'],
    },
  },
  marks: {
    link: {
      attrs: { href: {}, title: { default: null } }, inclusive: false,
      toDOM: (mark) => {
        // A link that could run code (javascript:, data:, …) is shown as a link that goes nowhere.
        if (!safeHref(mark.attrs.href)) return ['a', { rel: 'noopener noreferrer', class: 'unsafe', title: 'This link is not followed: its address could run code' }, 0];
        return ['a', { href: mark.attrs.href, rel: 'noopener noreferrer', title: mark.attrs.title ?? mark.attrs.href }, 0];
      },
    },
    strong: { attrs: { tag: { default: 'strong' } }, toDOM: () => ['strong', 0] },
    em: { attrs: { tag: { default: 'em' } }, toDOM: () => ['em', 0] },
    strike: { attrs: { tag: { default: 's' } }, toDOM: () => ['s', 0] },
    code: { toDOM: () => ['code', 0] },
  },
});

/** The HTML element each inline mark is written with, and the mark each element reads as. */
export const MARK_TAGS = {
  b: 'strong', strong: 'strong', i: 'em', em: 'em', s: 'strike', strike: 'strike', del: 'strike', code: 'code', a: 'link',
};
