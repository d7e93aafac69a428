// Note HTML ⇄ editor document, one block per node, without a DOM (so node's test runner can
// check it). Opening a note keeps every node tied to the block it came from; saving writes
// that block's own HTML for every node the person did not change, and builds new HTML only for
// the nodes they did. So an edit to one paragraph changes exactly one block, whatever editor
// wrote the rest (`<b>` stays `<b>`, colours and checklist conventions stay as they were).

import { schema, MARK_TAGS } from './schema.js';
import {
  split, join, tokenize, attributesOf, trimHTMLSpace, blockKey, checklistRule, checklistState, attributeValue, BLOCK_LEVEL,
} from './htmlblocks.js';
import { decodeEntities, escapeText, escapeAttribute } from './text.js';
import { safeHref, sanitizeHTML } from './sanitize.js';

// ---- Opening -------------------------------------------------------------------------------

/**
 * An opened note: the editor document, and for each node the block it came from.
 * `origin` maps node objects (unchanged nodes keep their identity through edits) and
 * `originByJSON` node contents (a node rebuilt with the same content, e.g. by a split) to the
 * block notesd has for them.
 */
export class OpenedNote {
  /** `html` as `notes.get` answered it; `nodes`, when given, are editor nodes already tied to its blocks. */
  constructor(html, blocks = split(html), nodes = null) {
    this.html = html;
    this.blocks = blocks;
    this.origin = new WeakMap();
    this.tied = [];
    this.originByJSON = null; // made on first need: a 2,000-block note opens without it
    const made = nodes ?? blocks.map(blockToNode);
    made.forEach((node, i) => this.tie(node, blocks[i]));
    if (made.length === 0) made.push(schema.nodes.paragraph.create());
    this.nodes = made;
    this.doc = schema.nodes.doc.create(null, made);
  }

  tie(node, block) {
    this.origin.set(node, block);
    this.tied.push([node, block]);
  }

  /** Source blocks by their node's content (the first block with that content wins). */
  byContent() {
    if (!this.originByJSON) {
      this.originByJSON = new Map();
      for (const [node, block] of this.tied) {
        const key = JSON.stringify(node.toJSON());
        if (!this.originByJSON.has(key)) this.originByJSON.set(key, block);
      }
    }
    return this.originByJSON;
  }

  /** The block a node of the current document stands for: its source block when unchanged. */
  blockOf(node) {
    return this.origin.get(node) ?? this.byContent().get(JSON.stringify(node.toJSON())) ?? nodeToBlock(node);
  }

  /** The blocks of `doc`, untouched ones exactly as they were opened. */
  blocksOf(doc) {
    const blocks = [];
    doc.forEach((node) => blocks.push(this.blockOf(node)));
    // The empty paragraph an empty note is shown with is not a block worth saving.
    if (blocks.length === 1 && blocks[0].kind === 'paragraph' && blocks[0].content === '' && blocks[0].attributes.length === 0
      && !this.origin.has(doc.firstChild)) return [];
    return blocks;
  }

  /** The HTML to save for `doc`: the opened HTML byte for byte when no block changed. */
  htmlOf(doc, blocks = this.blocksOf(doc)) {
    if (blocks.length === this.blocks.length && blocks.every((b, i) => b === this.blocks[i])) return this.html;
    return join(blocks);
  }

  /**
   * What was sent for `doc`: a base whose blocks are `doc`'s, tied to `doc`'s own nodes, to
   * merge the daemon's answer against (`mergeServer`).
   */
  baseFor(doc) {
    const nodes = [];
    doc.forEach((node) => nodes.push(node));
    const blocks = this.blocksOf(doc);
    return { html: this.htmlOf(doc, blocks), blocks, nodes: blocks.length === nodes.length ? nodes : [] };
  }

  /** The base of the note as opened. */
  get base() {
    return { html: this.html, blocks: this.blocks, nodes: this.blocks.length === this.nodes.length ? this.nodes : [] };
  }
}

/**
 * Brings the daemon's version of the note (`serverHtml`) into the editor without touching
 * what the person changed since `base` (what the editor last had from, or sent to, the
 * daemon): the blocks the daemon changed against `base` replace the editor's nodes for them,
 * one transaction, so the selection maps through it and the typing elsewhere stays.
 *
 * Returns `{tr, opened}` — the transaction (null when nothing changed on screen) and the
 * OpenedNote to save from now on — or `{conflict: true}` when the daemon changed a block the
 * person has changed too since `base` (then save with `base`'s heads, and the daemon's merge
 * keeps both versions).
 */
export function mergeServer(state, base, serverHtml) {
  // The daemon has exactly what was sent (a save nothing else changed meanwhile): nothing to
  // bring in, and the blocks sent are its blocks (no second split of a long note).
  if (serverHtml === base.html && base.nodes.length === base.blocks.length) {
    return { tr: null, opened: new OpenedNote(serverHtml, base.blocks, base.nodes) };
  }
  const theirs = split(serverHtml);
  const current = [];
  state.doc.forEach((node, offset) => current.push({ node, offset }));
  const indexOfNode = new Map(current.map((entry, i) => [entry.node, i]));
  const hunks = diffBlocks(base.blocks, theirs);
  if (base.nodes.length !== base.blocks.length && hunks.length > 0) return { conflict: true };
  const newNodes = new Array(theirs.length);
  const replacements = [];
  for (const hunk of hunks) {
    // The editor's nodes for base blocks [a, b): all still there, untouched and in order.
    let from;
    let to;
    if (hunk.a < hunk.b) {
      const first = indexOfNode.get(base.nodes[hunk.a]);
      if (first === undefined) return { conflict: true };
      for (let i = hunk.a; i < hunk.b; i += 1) {
        if (indexOfNode.get(base.nodes[i]) !== first + (i - hunk.a)) return { conflict: true };
      }
      from = current[first].offset;
      const last = current[first + (hunk.b - hunk.a) - 1];
      to = last.offset + last.node.nodeSize;
    } else if (hunk.a > 0 && indexOfNode.has(base.nodes[hunk.a - 1])) {
      const before = current[indexOfNode.get(base.nodes[hunk.a - 1])];
      from = to = before.offset + before.node.nodeSize;
    } else if (hunk.a < base.nodes.length && indexOfNode.has(base.nodes[hunk.a])) {
      from = to = current[indexOfNode.get(base.nodes[hunk.a])].offset;
    } else if (base.nodes.length === 0) {
      // An empty note: only while the editor still shows it empty.
      if (state.doc.childCount !== 1 || state.doc.firstChild.content.size !== 0) return { conflict: true };
      from = 0;
      to = state.doc.content.size;
    } else {
      return { conflict: true };
    }
    const nodes = theirs.slice(hunk.c, hunk.d).map(blockToNode);
    nodes.forEach((node, i) => { newNodes[hunk.c + i] = node; });
    replacements.push({ from, to, nodes });
  }
  // Unchanged base blocks keep their editor nodes, now tied to the daemon's blocks.
  for (const [i, j] of equalPairs(base.blocks, theirs, hunks)) newNodes[j] = base.nodes[i];
  let tr = null;
  if (replacements.length > 0) {
    tr = state.tr;
    for (const r of replacements.sort((x, y) => y.from - x.from)) {
      if (r.nodes.length === 0 && r.from === 0 && r.to === state.doc.content.size) tr.replaceWith(r.from, r.to, schema.nodes.paragraph.create());
      else tr.replaceWith(r.from, r.to, r.nodes);
    }
    tr.setMeta('addToHistory', false).setMeta('notesd-remote', true);
  }
  const opened = new OpenedNote(serverHtml, theirs, newNodes.every(Boolean) ? newNodes : null);
  return { tr, opened };
}

/**
 * Where two block lists differ, as hunks {a, b, c, d}: base blocks [a, b) became theirs [c, d).
 * Blocks compare as notesd compares them (kind, attributes, content).
 */
export function diffBlocks(base, theirs) {
  const x = base.map(blockKey);
  const y = theirs.map(blockKey);
  let start = 0;
  while (start < x.length && start < y.length && x[start] === y[start]) start += 1;
  let endX = x.length;
  let endY = y.length;
  while (endX > start && endY > start && x[endX - 1] === y[endY - 1]) { endX -= 1; endY -= 1; }
  if (start === endX && start === endY) return [];
  const n = endX - start;
  const m = endY - start;
  if (n * m > 4_000_000 || n === 0 || m === 0) return [{ a: start, b: endX, c: start, d: endY }];
  // Longest common subsequence of the middle, then the runs between its matches.
  const width = m + 1;
  const table = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i -= 1) {
    for (let j = m - 1; j >= 0; j -= 1) {
      table[i * width + j] = x[start + i] === y[start + j]
        ? table[(i + 1) * width + j + 1] + 1
        : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
    }
  }
  const hunks = [];
  let i = 0;
  let j = 0;
  let hunk = null;
  while (i < n || j < m) {
    if (i < n && j < m && x[start + i] === y[start + j]) {
      if (hunk) { hunks.push(hunk); hunk = null; }
      i += 1; j += 1;
    } else {
      if (!hunk) hunk = { a: start + i, b: start + i, c: start + j, d: start + j };
      if (j < m && (i >= n || table[i * width + j + 1] >= table[(i + 1) * width + j])) { j += 1; hunk.d = start + j; } else { i += 1; hunk.b = start + i; }
    }
  }
  if (hunk) hunks.push(hunk);
  return hunks;
}

/** The (base index, theirs index) pairs outside `hunks`. */
function equalPairs(base, theirs, hunks) {
  const pairs = [];
  let i = 0;
  let j = 0;
  for (const hunk of [...hunks, { a: base.length, b: base.length, c: theirs.length, d: theirs.length }]) {
    while (i < hunk.a && j < hunk.c) pairs.push([i++, j++]);
    i = hunk.b;
    j = hunk.d;
  }
  return pairs;
}

/** The editor node for one block. */
export function blockToNode(block) {
  const kept = { attributes: block.attributes, startTag: block.startTag };
  switch (block.kind) {
    case 'paragraph':
    case 'division':
      return schema.nodes.paragraph.create({ ...kept, division: block.kind === 'division' }, inlineNodes(block.content));
    case 'heading':
      return schema.nodes.heading.create({ ...kept, level: block.level }, inlineNodes(block.content));
    case 'quote':
      return schema.nodes.quote.create(kept, inlineNodes(block.content));
    case 'code': {
      const wrapCode = /^<code[\s>]/i.test(block.content);
      const text = plainText(block.content);
      return schema.nodes.code_block.create({ ...kept, wrapCode }, text ? schema.text(text) : null);
    }
    case 'rule':
      return schema.nodes.rule.create(kept);
    case 'listItem':
      return schema.nodes.list_item.create({
        ...kept,
        containers: block.containers.map((c) => ({ ordered: c.ordered, attributes: c.attributes, startTag: c.startTag ?? null })),
        checked: checklistState(block),
      }, inlineNodes(block.content, { skipLeadingCheckbox: true }));
    default:
      return schema.nodes.opaque.create({ html: block.content });
  }
}

/** The text of HTML, entities decoded, tags dropped, `<br>` a newline (for code blocks and pastes). */
export function plainText(html) {
  let out = '';
  for (const token of tokenize(html)) {
    if (token.kind === 'text') out += decodeEntities(html.slice(token.from, token.to));
    else if (token.kind === 'start' && token.name === 'br') out += '\n';
  }
  return out;
}

/**
 * The inline nodes of a block's inner HTML: text with the marks the model has (bold, italic,
 * strikethrough, code, links) and line breaks. Other inline markup (colours, spans, fonts) is
 * shown as its text; block tags inside a quote become line breaks.
 */
export function inlineNodes(html, options = {}) {
  const nodes = [];
  const active = []; // {tag, mark}
  let pendingBreak = false;
  let seenText = false;
  const marks = () => {
    let set = [];
    for (const entry of active) set = entry.mark.addToSet(set);
    return set;
  };
  for (const token of tokenize(html)) {
    if (token.kind === 'text') {
      const text = decodeEntities(html.slice(token.from, token.to)).replace(/[\t\n\f\r ]+/g, ' ');
      if (text === '' || (text === ' ' && (nodes.length === 0 || pendingBreak))) continue;
      if (pendingBreak && nodes.length > 0) nodes.push(schema.nodes.hard_break.create());
      pendingBreak = false;
      seenText = true;
      nodes.push(schema.text(text, marks()));
    } else if (token.kind === 'start') {
      if (token.name === 'br') {
        nodes.push(schema.nodes.hard_break.create());
        pendingBreak = false;
      } else if (token.name === 'input' && options.skipLeadingCheckbox && !seenText) {
        // The checkbox is the item's state, shown by the editor itself.
      } else if (BLOCK_LEVEL.has(token.name)) {
        pendingBreak = true;
      } else if (MARK_TAGS[token.name]) {
        const mark = markFor(token.name, attributesOf(html, token));
        if (mark) active.push({ tag: token.name, mark });
      }
    } else if (token.kind === 'end') {
      if (BLOCK_LEVEL.has(token.name)) {
        pendingBreak = true;
      } else if (MARK_TAGS[token.name]) {
        for (let i = active.length - 1; i >= 0; i -= 1) {
          if (MARK_TAGS[active[i].tag] === MARK_TAGS[token.name]) { active.splice(i, 1); break; }
        }
      }
    }
  }
  // Trailing spaces collapse away in HTML too.
  const last = nodes[nodes.length - 1];
  if (last?.isText && last.text.endsWith(' ')) {
    const trimmed = last.text.replace(/ +$/, '');
    nodes.pop();
    if (trimmed) nodes.push(schema.text(trimmed, last.marks));
  }
  return nodes;
}

function markFor(tag, attributes) {
  switch (MARK_TAGS[tag]) {
    case 'strong': return schema.marks.strong.create({ tag });
    case 'em': return schema.marks.em.create({ tag });
    case 'strike': return schema.marks.strike.create({ tag });
    case 'code': return schema.marks.code.create();
    case 'link': {
      const href = attributeValue(attributes, 'href');
      if (typeof href !== 'string') return null;
      const title = attributeValue(attributes, 'title');
      return schema.marks.link.create({ href, title: typeof title === 'string' ? title : null });
    }
    default: return null;
  }
}

// ---- Saving --------------------------------------------------------------------------------

/** The block a (changed) node is saved as. */
export function nodeToBlock(node) {
  const attributes = node.attrs.attributes ?? [];
  switch (node.type.name) {
    case 'paragraph': {
      const kind = node.attrs.division ? 'division' : 'paragraph';
      return withStartTag({ kind, attributes, content: inlineHTML(node) }, kind === 'division' ? 'div' : 'p', node.attrs.startTag);
    }
    case 'heading':
      return withStartTag({ kind: 'heading', level: node.attrs.level, attributes, content: inlineHTML(node) }, `h${node.attrs.level}`, node.attrs.startTag);
    case 'quote':
      return withStartTag({ kind: 'quote', attributes, content: inlineHTML(node) }, 'blockquote', node.attrs.startTag);
    case 'code_block': {
      const text = escapeText(node.textContent);
      return withStartTag({ kind: 'code', attributes, content: node.attrs.wrapCode ? `<code>${text}</code>` : text }, 'pre', node.attrs.startTag);
    }
    case 'rule':
      return withStartTag({ kind: 'rule', attributes, content: '' }, 'hr', node.attrs.startTag);
    case 'list_item': {
      const containers = node.attrs.containers.map((c) => withStartTag({ ordered: c.ordered, attributes: c.attributes }, c.ordered ? 'ol' : 'ul', c.startTag));
      const item = { kind: 'listItem', containers, attributes, content: inlineHTML(node) };
      if (node.attrs.checked !== null) {
        item.attributes = withCheckedState(item, node.attrs.checked);
      }
      return withStartTag(item, 'li', node.attrs.startTag);
    }
    case 'opaque':
      return { kind: 'opaque', attributes: [], content: node.attrs.html, startTag: null };
    default:
      throw new Error(`no block for node type ${node.type.name}`);
  }
}

/**
 * A block's start tag: the source text when it still names this element with exactly these
 * attributes (a paragraph turned into a heading, or a ticked item, gets a fresh one).
 */
function withStartTag(thing, tagName, source) {
  let startTag = null;
  if (source) {
    const tokens = tokenize(source);
    if (tokens.length === 1 && tokens[0].kind === 'start' && tokens[0].name === tagName
      && JSON.stringify(attributesOf(source, tokens[0])) === JSON.stringify(thing.attributes)) {
      startTag = source;
    }
  }
  return { ...thing, startTag };
}

/**
 * The item's attributes with its checklist state set the way its HTML already says it (the
 * rule notesd reads it by); an item whose state is not in its own attributes gets
 * `data-checked`, which notesd reads first.
 */
export function withCheckedState(item, checked) {
  const rule = checklistRule({ ...item, content: '' });
  const set = (name, value) => {
    const index = item.attributes.findIndex((a) => a.name === name);
    if (index < 0) return [...item.attributes, { name, value }];
    const copy = [...item.attributes];
    copy[index] = { name, value };
    return copy;
  };
  switch (rule?.rule) {
    case 'data-checked': return set('data-checked', String(checked));
    case 'data-list': return set('data-list', checked ? 'checked' : 'unchecked');
    case 'aria-checked': return set('aria-checked', String(checked));
    case 'class': {
      const classes = attributeValue(item.attributes, 'class');
      const words = classes.split(/[\t\n\f\r ]+/).filter((w) => w !== 'checked' && w !== 'unchecked');
      words.push(checked ? 'checked' : 'unchecked');
      return set('class', words.join(' '));
    }
    default: return set('data-checked', String(checked));
  }
}

const MARK_ORDER = ['link', 'strong', 'em', 'strike', 'code'];

function openTag(mark) {
  switch (mark.type.name) {
    case 'link': {
      let tag = `<a href="${escapeAttribute(mark.attrs.href)}"`;
      if (mark.attrs.title) tag += ` title="${escapeAttribute(mark.attrs.title)}"`;
      return `${tag}>`;
    }
    case 'strong': case 'em': case 'strike': return `<${mark.attrs.tag}>`;
    default: return '<code>';
  }
}

function closeTag(mark) {
  switch (mark.type.name) {
    case 'link': return '</a>';
    case 'strong': case 'em': case 'strike': return `</${mark.attrs.tag}>`;
    default: return '</code>';
  }
}

/** The inner HTML of a text block: text escaped, marks nested in one fixed order. */
export function inlineHTML(node) {
  let out = '';
  let open = [];
  const sorted = (marks) => [...marks].sort((a, b) => MARK_ORDER.indexOf(a.type.name) - MARK_ORDER.indexOf(b.type.name));
  const sync = (marks) => {
    let keep = 0;
    while (keep < open.length && keep < marks.length && open[keep].eq(marks[keep])) keep += 1;
    for (let i = open.length - 1; i >= keep; i -= 1) out += closeTag(open[i]);
    for (let i = keep; i < marks.length; i += 1) out += openTag(marks[i]);
    open = marks;
  };
  node.forEach((child) => {
    if (child.isText) {
      sync(sorted(child.marks));
      out += escapeText(child.text).replace(/\u00a0/g, '&nbsp;');
    } else if (child.type.name === 'hard_break') {
      sync(sorted(child.marks));
      out += '<br>';
    }
  });
  sync([]);
  // notesd trims edge whitespace from block content: trimming here too means the block saved
  // is the block notesd stores.
  return trimHTMLSpace(out);
}

/** Whether a link target may be stored from the editor (the link dialog refuses others). */
export function acceptableHref(href) {
  return safeHref(href) || /^[a-z0-9.-]+\.[a-z]{2,}(\/|$)/i.test(href);
}

// ---- Pasting -------------------------------------------------------------------------------

/**
 * The editor nodes for HTML another app put on the clipboard: sanitised, split into blocks as
 * notesd would, each block made the editor's own node with none of the other app's attributes;
 * pieces the model cannot hold (tables, figures, stray markup) become paragraphs of their text.
 */
export function pastedNodes(html) {
  const nodes = split(sanitizeHTML(html)).map((block) => {
    if (block.kind === 'opaque') {
      // Cells and other blocks inside it are separated by a space in its text.
      const text = plainText(block.content.replace(/<\/(td|th|tr|p|div|li|h[1-6]|blockquote|pre)>/gi, ' $&')).replace(/\s+/g, ' ').trim();
      return schema.nodes.paragraph.create(null, text ? [schema.text(text)] : []);
    }
    // The state of a checklist item is kept; the other app's attributes are not.
    const node = blockToNode(block);
    const attrs = { ...node.attrs, attributes: [], startTag: null };
    if (node.type === schema.nodes.list_item) attrs.containers = node.attrs.containers.map((c) => ({ ordered: c.ordered, attributes: [], startTag: null }));
    return node.type.create(attrs, node.content);
  });
  return nodes.filter((node) => node.type !== schema.nodes.paragraph || node.content.size > 0);
}

/** Plain text pasted: a paragraph per blank-line-separated chunk, line breaks kept. */
export function pastedTextNodes(text) {
  return text.split(/\r?\n\r?\n/).map((chunk) => {
    const out = [];
    chunk.split(/\r?\n/).forEach((line, i) => {
      if (i > 0) out.push(schema.nodes.hard_break.create());
      if (line) out.push(schema.text(line));
    });
    return schema.nodes.paragraph.create(null, out);
  });
}

export { split, join, blockKey };
