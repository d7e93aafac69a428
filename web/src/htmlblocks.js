// A note body's HTML as blocks, the same way notesd splits it (docs/merge.md, "The block
// model"; Sources/Merge/HTML). The app must agree with the daemon exactly: a save reproduces
// every block the person did not touch, and the daemon compares blocks by kind, attributes and
// content. Each block also remembers the source text of its start tag (and of its lists' start
// tags), so an untouched block is written back with the very bytes it came with.
//
// The tokenizer and splitter only look at ASCII characters, so working on JavaScript strings
// (UTF-16) gives the same tokens as notesd's UTF-8 bytes.

import { decodeEntities, escapeAttribute } from './text.js';

export const BLOCK_LEVEL = new Set([
  'address', 'article', 'aside', 'blockquote', 'body', 'caption', 'center', 'colgroup', 'dd',
  'details', 'dialog', 'dir', 'div', 'dl', 'dt', 'fieldset', 'figcaption', 'figure', 'footer',
  'form', 'frameset', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'head', 'header', 'hgroup', 'hr',
  'html', 'legend', 'li', 'listing', 'main', 'menu', 'nav', 'ol', 'p', 'plaintext', 'pre',
  'section', 'summary', 'table', 'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'ul', 'xmp',
]);
const WRAPPERS = new Set(['div', 'html', 'body', 'section', 'article', 'main', 'header', 'footer', 'aside', 'nav']);
export const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr']);
const LIST_STRUCTURE = new Set(['ul', 'ol', 'li']);
const HEADINGS = { h1: 1, h2: 2, h3: 3, h4: 4, h5: 5, h6: 6 };
const MAXIMUM_NESTING = 48;

const isSpace = (c) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
const isLetter = (c) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const isDigit = (c) => c >= 0x30 && c <= 0x39;
const isNameChar = (c) => isLetter(c) || isDigit(c) || c === 0x2d || c === 0x3a || c === 0x5f || c === 0x2e;
const lower = (s) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

// ---- Tokenizer -------------------------------------------------------------------------

/**
 * Tokens of `html`: {kind: 'text'|'start'|'end'|'comment'|'raw', from, to, name, attrFrom, attrTo}.
 * Whatever cannot be completed (an unclosed tag, `<` before a non-letter, a `<script>` without
 * its end) is text, as notesd does, so no character is ever lost.
 */
export function tokenize(html) {
  const tokens = [];
  const count = html.length;
  let textStart = 0;
  let index = 0;
  const rawWithoutEnd = new Set();
  while (index < count) {
    const tag = html.charCodeAt(index) === 0x3c ? markup(html, index) : null;
    if (!tag) { index += 1; continue; }
    let next = tag.to;
    let raw = null;
    if (tag.kind === 'start' && (tag.name === 'script' || tag.name === 'style')) {
      const end = rawWithoutEnd.has(tag.name) ? -1 : rawTextEnd(html, tag.name, next);
      if (end < 0) { rawWithoutEnd.add(tag.name); index += 1; continue; }
      raw = { kind: 'raw', from: next, to: end, name: '' };
      next = end;
    }
    if (textStart < index) tokens.push({ kind: 'text', from: textStart, to: index, name: '' });
    tokens.push(tag);
    if (raw && raw.to > raw.from) tokens.push(raw);
    index = next;
    textStart = next;
  }
  if (textStart < count) tokens.push({ kind: 'text', from: textStart, to: count, name: '' });
  return tokens;
}

function markup(html, start) {
  const count = html.length;
  if (start + 1 >= count) return null;
  const next = html.charCodeAt(start + 1);
  if (next === 0x21) { // !
    if (start + 3 < count && html.charCodeAt(start + 2) === 0x2d && html.charCodeAt(start + 3) === 0x2d) {
      const end = html.indexOf('-->', start + 2);
      return end < 0 ? null : { kind: 'comment', from: start, to: end + 3, name: '' };
    }
    const end = html.indexOf('>', start + 2);
    return end < 0 ? null : { kind: 'comment', from: start, to: end + 1, name: '' };
  }
  if (next === 0x3f) { // ?
    const end = html.indexOf('>', start + 2);
    return end < 0 ? null : { kind: 'comment', from: start, to: end + 1, name: '' };
  }
  const isEnd = next === 0x2f;
  const nameStart = isEnd ? start + 2 : start + 1;
  if (nameStart >= count || !isLetter(html.charCodeAt(nameStart))) return null;
  let nameEnd = nameStart + 1;
  while (nameEnd < count && isNameChar(html.charCodeAt(nameEnd))) nameEnd += 1;
  if (nameEnd >= count) return null;
  const after = html.charCodeAt(nameEnd);
  if (!(isSpace(after) || after === 0x2f || after === 0x3e)) return null;
  const end = scanAttributes(html, nameEnd, null);
  if (!end) return null;
  return {
    kind: isEnd ? 'end' : 'start', from: start, to: end.next,
    name: lower(html.slice(nameStart, nameEnd)), attrFrom: nameEnd, attrTo: end.attributesEnd,
  };
}

/** Walks a tag's attributes to its `>`, collecting them into `into` when given; null if unclosed. */
function scanAttributes(html, start, into) {
  const count = html.length;
  let index = start;
  for (;;) {
    while (index < count && isSpace(html.charCodeAt(index))) index += 1;
    if (index >= count) return null;
    const c = html.charCodeAt(index);
    if (c === 0x3e) return { attributesEnd: index, next: index + 1 };
    if (c === 0x2f) {
      if (index + 1 < count && html.charCodeAt(index + 1) === 0x3e) return { attributesEnd: index, next: index + 2 };
      index += 1;
      continue;
    }
    const nameStart = index;
    index += 1;
    while (index < count) {
      const d = html.charCodeAt(index);
      if (isSpace(d) || d === 0x2f || d === 0x3e || d === 0x3d) break;
      index += 1;
    }
    const nameEnd = index;
    while (index < count && isSpace(html.charCodeAt(index))) index += 1;
    let value = null;
    if (index < count && html.charCodeAt(index) === 0x3d) {
      index += 1;
      while (index < count && isSpace(html.charCodeAt(index))) index += 1;
      if (index >= count) return null;
      const quote = html.charCodeAt(index);
      if (quote === 0x22 || quote === 0x27) {
        const close = html.indexOf(String.fromCharCode(quote), index + 1);
        if (close < 0) return null;
        value = [index + 1, close];
        index = close + 1;
      } else {
        const valueStart = index;
        while (index < count && !isSpace(html.charCodeAt(index)) && html.charCodeAt(index) !== 0x3e) index += 1;
        value = [valueStart, index];
      }
    }
    if (into) {
      into.push({
        name: lower(html.slice(nameStart, nameEnd)),
        value: value ? decodeEntities(html.slice(value[0], value[1])) : null,
      });
    }
  }
}

/** A start tag's attributes, in source order, names lower-cased, values decoded. */
export function attributesOf(html, token) {
  if (token.kind !== 'start' || token.attrTo <= token.attrFrom) return [];
  const out = [];
  scanAttributes(html, token.attrFrom, out);
  return out;
}

function rawTextEnd(html, name, start) {
  let index = start;
  for (;;) {
    const candidate = html.indexOf('</', index);
    if (candidate < 0) return -1;
    if (lower(html.slice(candidate + 2, candidate + 2 + name.length)) === name) {
      const tag = markup(html, candidate);
      if (tag && tag.kind === 'end' && tag.name === name) return candidate;
    }
    index = candidate + 1;
  }
}

/** Whether `join` could write this attribute back as one attribute (notesd's rule). */
function writable(attribute) {
  return attribute.name.length > 0 && !/[ \t\n\f\r/>="'<A-Z]/.test(attribute.name);
}

// ---- Splitting -------------------------------------------------------------------------

/**
 * The blocks of `html`, as notesd's `HTMLBlocks.split` makes them. A block is
 * `{kind, level?, attributes, content, startTag, containers?}`: `kind` is one of paragraph,
 * division, heading, quote, code, rule, listItem, opaque; `startTag` is the source text of the
 * block's own start tag (null for opaque blocks); a list item's `containers` are its lists,
 * outermost first, each `{ordered, attributes, startTag}`.
 */
export function split(html) {
  const splitter = new Splitter(html);
  splitter.splitRange(0, splitter.tokens.length, 0);
  return splitter.blocks;
}

class Splitter {
  constructor(html) {
    this.html = html;
    this.tokens = tokenize(html);
    this.blocks = [];
    this.matching = new Int32Array(this.tokens.length).fill(-1);
    const open = new Map();
    this.tokens.forEach((token, index) => {
      if (!BLOCK_LEVEL.has(token.name) || VOID.has(token.name) || LIST_STRUCTURE.has(token.name)) return;
      if (token.kind === 'start') {
        if (!open.has(token.name)) open.set(token.name, []);
        open.get(token.name).push(index);
      } else if (token.kind === 'end') {
        const start = open.get(token.name)?.pop();
        if (start !== undefined) this.matching[start] = index;
      }
    });
  }

  matchingEnd(start, end) {
    const close = this.matching[start];
    return close >= 0 && close < end ? close : null;
  }

  isWhitespace(token) {
    if (token.kind !== 'text') return false;
    for (let i = token.from; i < token.to; i += 1) if (!isSpace(this.html.charCodeAt(i))) return false;
    return true;
  }

  isBoundary(token) {
    return (token.kind === 'start' || token.kind === 'end') && BLOCK_LEVEL.has(token.name);
  }

  containsBoundary(from, to) {
    for (let i = from; i < to; i += 1) if (this.isBoundary(this.tokens[i])) return true;
    return false;
  }

  hasWritableAttributes(token) {
    return attributesOf(this.html, token).every(writable);
  }

  startTagText(token) {
    return this.html.slice(token.from, token.to);
  }

  splitRange(from, to, depth) {
    let index = from;
    while (index < to) {
      const token = this.tokens[index];
      if (token.kind === 'text' && this.isWhitespace(token)) {
        index += 1;
      } else if (token.kind === 'start' && BLOCK_LEVEL.has(token.name)) {
        index = this.splitElement(index, to, depth);
      } else if (token.kind === 'end' && BLOCK_LEVEL.has(token.name)) {
        this.appendOpaque(index, index + 1);
        index += 1;
      } else {
        let stop = index;
        while (stop < to && !this.isBoundary(this.tokens[stop])) stop += 1;
        this.appendOpaque(index, stop);
        index = stop;
      }
    }
  }

  splitElement(start, end, depth) {
    const token = this.tokens[start];
    const attributes = attributesOf(this.html, token);
    if (!attributes.every(writable)) {
      this.appendOpaque(start, start + 1);
      return start + 1;
    }
    const name = token.name;
    const close = this.matchingEnd(start, end);
    if (name === 'p') return this.splitParagraph(start, attributes, end);
    if (name === 'hr') {
      this.append({ kind: 'rule', attributes, content: '', startTag: this.startTagText(token) });
      return start + 1;
    }
    if (name === 'ul' || name === 'ol') return this.splitList(start, [], end).next;
    if (close === null) {
      this.appendOpaque(start, start + 1);
      return start + 1;
    }
    const startTag = this.startTagText(token);
    if (HEADINGS[name]) {
      if (this.containsBoundary(start + 1, close)) {
        this.appendOpaque(start, start + 1);
        return start + 1;
      }
      this.append({ kind: 'heading', level: HEADINGS[name], attributes, content: this.canonical(start + 1, close, true), startTag });
    } else if (name === 'blockquote') {
      this.append({ kind: 'quote', attributes, content: this.canonical(start + 1, close, true), startTag });
    } else if (name === 'pre') {
      this.append({ kind: 'code', attributes, content: this.canonical(start + 1, close, false), startTag });
    } else if (name === 'div' && !this.containsBoundary(start + 1, close)) {
      this.append({ kind: 'division', attributes, content: this.canonical(start + 1, close, true), startTag });
    } else if (WRAPPERS.has(name) && depth < MAXIMUM_NESTING) {
      this.appendOpaque(start, start + 1);
      this.splitRange(start + 1, close, depth + 1);
      this.appendOpaque(close, close + 1);
    } else {
      this.appendOpaque(start, close + 1);
    }
    return close + 1;
  }

  splitParagraph(start, attributes, end) {
    const startTag = this.startTagText(this.tokens[start]);
    let index = start + 1;
    while (index < end) {
      const token = this.tokens[index];
      if (token.kind === 'end' && token.name === 'p') {
        this.append({ kind: 'paragraph', attributes, content: this.canonical(start + 1, index, true), startTag });
        return index + 1;
      }
      if (this.isBoundary(token)) break;
      index += 1;
    }
    this.append({ kind: 'paragraph', attributes, content: this.canonical(start + 1, index, true), startTag });
    return index;
  }

  splitList(start, enclosing, end) {
    const first = this.blocks.length;
    const result = this.splitListItems(start, enclosing, end);
    if (!this.blocks.slice(first).some((b) => b.kind === 'listItem')) {
      this.blocks.length = first;
      this.appendOpaque(start, result.next);
    }
    return result;
  }

  splitListItems(start, enclosing, end) {
    const token = this.tokens[start];
    const containers = [...enclosing, {
      ordered: token.name === 'ol', attributes: attributesOf(this.html, token), startTag: this.startTagText(token),
    }];
    let index = start + 1;
    while (index < end) {
      const t = this.tokens[index];
      if (t.kind === 'text' && this.isWhitespace(t)) {
        index += 1;
      } else if (t.kind === 'start' && t.name === 'li' && this.hasWritableAttributes(t)) {
        const item = this.splitItem(index, containers, end);
        if (item.interrupted) return item;
        index = item.next;
      } else if (t.kind === 'start' && (t.name === 'ul' || t.name === 'ol') && this.hasWritableAttributes(t)
        && containers.length < MAXIMUM_NESTING) {
        const nested = this.splitList(index, containers, end);
        if (nested.interrupted) return nested;
        index = nested.next;
      } else if (t.kind === 'end' && (t.name === 'ul' || t.name === 'ol')) {
        return { next: index + 1, interrupted: false };
      } else {
        return { next: index, interrupted: true };
      }
    }
    return { next: end, interrupted: false };
  }

  splitItem(start, containers, end) {
    let itemTag = this.tokens[start];
    let contentStart = start + 1;
    let index = contentStart;
    const flush = (contentEnd) => {
      const content = this.canonical(contentStart, contentEnd, true);
      if (itemTag) {
        this.append({
          kind: 'listItem', containers, attributes: attributesOf(this.html, itemTag), content,
          startTag: this.startTagText(itemTag),
        });
        itemTag = null;
      } else if (content.length > 0) {
        this.append({ kind: 'listItem', containers, attributes: [], content, startTag: '<li>' });
      }
    };
    while (index < end) {
      const token = this.tokens[index];
      const isList = token.name === 'ul' || token.name === 'ol';
      if (token.kind === 'end' && token.name === 'li') { flush(index); return { next: index + 1, interrupted: false }; }
      if (token.kind === 'start' && (token.name === 'li' || (isList && !this.hasWritableAttributes(token)))) {
        flush(index);
        return { next: index, interrupted: false };
      }
      if (token.kind === 'start' && isList && containers.length >= MAXIMUM_NESTING) {
        flush(index);
        return { next: index, interrupted: true };
      }
      if (token.kind === 'end' && isList) { flush(index); return { next: index, interrupted: false }; }
      if (token.kind === 'start' && isList) {
        flush(index);
        const nested = this.splitList(index, containers, end);
        if (nested.interrupted) return nested;
        index = nested.next;
        contentStart = index;
        continue;
      }
      if (token.kind === 'start') {
        const close = this.matchingEnd(index, end);
        if (close !== null) { index = close + 1; continue; }
      }
      index += 1;
    }
    flush(end);
    return { next: end, interrupted: false };
  }

  append(block) {
    this.blocks.push(block);
  }

  appendOpaque(from, to) {
    const html = this.canonical(from, to, true);
    if (html.length > 0) this.blocks.push({ kind: 'opaque', attributes: [], content: html, startTag: null });
  }

  /** The source of tokens[from..<to] with every `<` in text written `&lt;`, optionally trimmed. */
  canonical(from, to, trim) {
    if (from >= to) return '';
    let out = '';
    for (let i = from; i < to; i += 1) {
      const token = this.tokens[i];
      const text = this.html.slice(token.from, token.to);
      out += token.kind === 'text' ? text.replaceAll('<', '&lt;') : text;
    }
    return trim ? trimHTMLSpace(out) : out;
  }
}

/** Trims HTML's ASCII whitespace only (not U+00A0, which JavaScript's trim would also remove). */
export function trimHTMLSpace(s) {
  let lowerIndex = 0;
  let upperIndex = s.length;
  while (lowerIndex < upperIndex && isSpace(s.charCodeAt(lowerIndex))) lowerIndex += 1;
  while (upperIndex > lowerIndex && isSpace(s.charCodeAt(upperIndex - 1))) upperIndex -= 1;
  return s.slice(lowerIndex, upperIndex);
}

// ---- Joining ---------------------------------------------------------------------------

function writeAttributes(attributes) {
  let out = '';
  for (const a of attributes) out += a.value === null ? ` ${a.name}` : ` ${a.name}="${escapeAttribute(a.value)}"`;
  return out;
}

/** The start tag a block or container is written with: its source text when it has one. */
function startTag(name, thing) {
  return thing.startTag ?? `<${name}${writeAttributes(thing.attributes)}>`;
}

const TAGS = { paragraph: 'p', division: 'div', quote: 'blockquote', code: 'pre' };

function sameContainer(a, b) {
  return a.ordered === b.ordered && attributesKey(a.attributes) === attributesKey(b.attributes);
}

/**
 * The HTML of `blocks`, as notesd's `HTMLBlocks.join` writes it: consecutive list items share
 * their lists, an item followed by deeper items holds their list, top-level blocks are
 * separated by a newline. Start tags are written from their source text where blocks have one.
 */
export function join(blocks) {
  let out = '';
  const open = []; // {container, itemOpen}
  const closeTo = (depth) => {
    while (open.length > depth) {
      const level = open.pop();
      if (level.itemOpen) out += '</li>';
      out += level.container.ordered ? '</ol>' : '</ul>';
    }
  };
  for (const block of blocks) {
    if (block.kind !== 'listItem') {
      closeTo(0);
      if (out.length > 0) out += '\n';
      out += blockHTML(block);
      continue;
    }
    const containers = block.containers;
    let shared = 0;
    while (shared < open.length && shared < containers.length && sameContainer(open[shared].container, containers[shared])) shared += 1;
    closeTo(shared);
    if (shared === containers.length) {
      if (open[shared - 1].itemOpen) out += '</li>';
    } else {
      if (open.length === 0 && out.length > 0) out += '\n';
      for (const container of containers.slice(shared)) {
        out += startTag(container.ordered ? 'ol' : 'ul', container);
        open.push({ container, itemOpen: false });
      }
    }
    out += startTag('li', block);
    out += block.content;
    open[open.length - 1].itemOpen = true;
  }
  closeTo(0);
  return out;
}

function blockHTML(block) {
  switch (block.kind) {
    case 'opaque': return block.content;
    case 'rule': return startTag('hr', block);
    case 'heading': return `${startTag(`h${block.level}`, block)}${block.content}</h${block.level}>`;
    case 'listItem': return join([block]);
    default: {
      const tag = TAGS[block.kind];
      return `${startTag(tag, block)}${block.content}</${tag}>`;
    }
  }
}

// ---- Identity ------------------------------------------------------------------------------

function attributesKey(attributes) {
  return attributes.map((a) => (a.value === null ? `${a.name}` : `${a.name}=${JSON.stringify(a.value)}`)).join(' ');
}

/**
 * What makes two blocks equal for notesd: kind, level, lists, attributes and content (the
 * source text of start tags is not part of it).
 */
export function blockKey(block) {
  const containers = block.kind === 'listItem'
    ? block.containers.map((c) => `${c.ordered ? 'ol' : 'ul'}[${attributesKey(c.attributes)}]`).join('>')
    : '';
  return `${block.kind}|${block.level ?? ''}|${containers}|${attributesKey(block.attributes)}|${block.content}`;
}

/** The value of the first attribute called `name`: undefined if absent, null if bare. */
export function attributeValue(attributes, name) {
  const found = attributes.find((a) => a.name === name);
  return found ? found.value : undefined;
}

/**
 * A checklist item's state (true/false), or null for anything else, by notesd's rule (first
 * match wins): data-checked, data-list, aria-checked, class word, a leading checkbox input,
 * the innermost list's data-checked.
 */
export function checklistState(block) {
  if (block.kind !== 'listItem') return null;
  return checklistRule(block)?.state ?? null;
}

/** Which of notesd's checklist rules decides an item's state, and the state: {rule, state}. */
export function checklistRule(block) {
  const bool = (attributes, name, yes, no) => {
    const value = attributeValue(attributes, name);
    if (typeof value !== 'string') return null;
    const v = value.toLowerCase();
    return v === yes ? true : v === no ? false : null;
  };
  let state = bool(block.attributes, 'data-checked', 'true', 'false');
  if (state !== null) return { rule: 'data-checked', state };
  state = bool(block.attributes, 'data-list', 'checked', 'unchecked');
  if (state !== null) return { rule: 'data-list', state };
  state = bool(block.attributes, 'aria-checked', 'true', 'false');
  if (state !== null) return { rule: 'aria-checked', state };
  const classes = attributeValue(block.attributes, 'class');
  if (typeof classes === 'string') {
    const words = classes.split(/[\t\n\f\r ]+/);
    if (words.includes('checked')) return { rule: 'class', state: true };
    if (words.includes('unchecked')) return { rule: 'class', state: false };
  }
  const box = leadingCheckbox(block.content);
  if (box !== null) return { rule: 'input', state: box };
  const inner = block.containers[block.containers.length - 1];
  state = bool(inner?.attributes ?? [], 'data-checked', 'true', 'false');
  if (state !== null) return { rule: 'list-data-checked', state };
  return null;
}

function leadingCheckbox(content) {
  for (const token of tokenize(content)) {
    if (token.kind === 'text') {
      if (!/^[\t\n\f\r ]*$/.test(content.slice(token.from, token.to))) return null;
    } else if (token.kind === 'start' && token.name === 'input') {
      const attributes = attributesOf(content, token);
      const type = attributeValue(attributes, 'type');
      if (typeof type !== 'string' || type.toLowerCase() !== 'checkbox') return null;
      return attributeValue(attributes, 'checked') !== undefined;
    }
  }
  return null;
}

/** Whether a list item is numbered, by notesd's rule (Quill 2's data-list wins over the tag). */
export function isOrderedItem(block) {
  const value = attributeValue(block.attributes, 'data-list');
  if (value === 'bullet' || value === 'checked' || value === 'unchecked') return false;
  if (value === 'ordered') return true;
  return block.containers[block.containers.length - 1].ordered;
}
