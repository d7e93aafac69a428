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
import { safeHref } from './sanitize.js';

// ---- Opening -------------------------------------------------------------------------------

/**
 * An opened note: the editor document, and for each node the block it came from.
 * `origin` maps node objects (unchanged nodes keep their identity through edits) and
 * `originByJSON` node contents (a node rebuilt with the same content, e.g. by a split).
 */
export class OpenedNote {
  constructor(html) {
    this.html = html;
    this.blocks = split(html);
    this.origin = new WeakMap();
    this.originByJSON = new Map();
    const nodes = this.blocks.map((block) => {
      const node = blockToNode(block);
      this.origin.set(node, block);
      const key = JSON.stringify(node.toJSON());
      if (!this.originByJSON.has(key)) this.originByJSON.set(key, block);
      return node;
    });
    if (nodes.length === 0) nodes.push(schema.nodes.paragraph.create());
    this.doc = schema.nodes.doc.create(null, nodes);
  }

  /** The block a node of the current document stands for: its source block when unchanged. */
  blockOf(node) {
    return this.origin.get(node) ?? this.originByJSON.get(JSON.stringify(node.toJSON())) ?? nodeToBlock(node);
  }

  /** The blocks of `doc`, untouched ones exactly as they were opened. */
  blocksOf(doc) {
    const blocks = [];
    doc.forEach((node) => {
      // An empty paragraph added at the end of an empty note is not a block worth saving.
      blocks.push(this.blockOf(node));
    });
    if (this.blocks.length === 0 && blocks.length === 1 && blocks[0].kind === 'paragraph' && blocks[0].content === '') return [];
    return blocks;
  }

  /** The HTML to save for `doc`: the opened HTML byte for byte when no block changed. */
  htmlOf(doc) {
    const blocks = this.blocksOf(doc);
    if (blocks.length === this.blocks.length && blocks.every((b, i) => b === this.blocks[i])) return this.html;
    return join(blocks);
  }
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

/** The text of HTML, entities decoded, tags dropped (for code blocks). */
function plainText(html) {
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

export { split, join, blockKey };
