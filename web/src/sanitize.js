// Note HTML comes from other devices and from imports: before it reaches the DOM it is reduced
// to the block model's elements and attributes (docs/web-app.md, "Safety"). The sanitiser works
// on notesd's own tokenizer, not on a DOM, and writes every tag it keeps itself, so nothing in
// the input but text (escaped) and the tags below can reach the page: no scripts, no event
// handlers, no styles, no iframes, objects, forms or SVG, no `javascript:` or `data:` URLs.

import { tokenize, attributesOf } from './htmlblocks.js';
import { escapeAttribute } from './text.js';

/** Elements kept, and the attributes each may keep. Everything else is dropped, its text kept. */
const ALLOWED = {
  p: [], div: [], h1: [], h2: [], h3: [], h4: [], h5: [], h6: [], blockquote: [], pre: [], hr: [],
  ul: [], ol: ['start'], li: ['data-checked'], br: [],
  b: [], strong: [], i: [], em: [], s: [], strike: [], del: [], code: [], u: [], sub: [], sup: [], mark: [],
  a: ['href', 'title'],
  table: [], thead: [], tbody: [], tfoot: [], tr: [], td: ['colspan', 'rowspan'], th: ['colspan', 'rowspan'],
};
const VOID_KEPT = new Set(['br', 'hr']);

/** Whether `href` is safe to follow: http(s), mailto, or a fragment; nothing that runs code. */
export function safeHref(href) {
  // Browsers ignore ASCII control characters and whitespace inside a scheme ("java\tscript:").
  const compact = href.replace(/[\u0000-\u0020\u007f]+/g, '').toLowerCase();
  if (/^(https?:|mailto:)/.test(compact)) return true;
  if (compact.startsWith('#')) return true;
  return false;
}

function keptAttributes(name, attributes) {
  const allowed = ALLOWED[name];
  let out = '';
  for (const attribute of attributes) {
    if (!allowed.includes(attribute.name) || attribute.value === null) continue;
    if (attribute.name === 'href' && !safeHref(attribute.value)) continue;
    if ((attribute.name === 'start' || attribute.name === 'colspan' || attribute.name === 'rowspan')
      && !/^[0-9]{1,4}$/.test(attribute.value)) continue;
    if (attribute.name === 'data-checked' && !/^(true|false)$/i.test(attribute.value)) continue;
    out += ` ${attribute.name}="${escapeAttribute(attribute.value)}"`;
  }
  if (name === 'a') out += ' rel="noopener noreferrer"';
  return out;
}

/** `html` reduced to the allowed elements and attributes, as HTML text safe to parse. */
export function sanitizeHTML(html) {
  let out = '';
  for (const token of tokenize(html)) {
    switch (token.kind) {
      case 'text':
        out += html.slice(token.from, token.to).replaceAll('<', '&lt;').replaceAll('>', '&gt;');
        break;
      case 'start':
        if (Object.prototype.hasOwnProperty.call(ALLOWED, token.name)) {
          out += `<${token.name}${keptAttributes(token.name, attributesOf(html, token))}>`;
        }
        break;
      case 'end':
        if (Object.prototype.hasOwnProperty.call(ALLOWED, token.name) && !VOID_KEPT.has(token.name)) out += `</${token.name}>`;
        break;
      default: // comments, and the bodies of <script> and <style>: never shown
        break;
    }
  }
  return out;
}

/** The text of a search snippet with notesd's match markers (U+0002 … U+0003) as <mark>. */
export function snippetHTML(snippet) {
  const escaped = snippet.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
  return escaped.replaceAll('\u0002', '<mark>').replaceAll('\u0003', '</mark>');
}
