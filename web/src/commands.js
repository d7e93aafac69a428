// The editing behaviour the editor needs on top of ProseMirror's core: key bindings, Markdown-
// style input rules, undo/redo and the block commands of the flat block model. Debian ships the
// core packages but not prosemirror-commands, -keymap, -history or -inputrules, so these are
// written here, small and for this schema only (docs/decisions.md, "Web app").

import { Plugin, PluginKey, TextSelection, NodeSelection, Selection } from 'prosemirror-state';
import { Decoration, DecorationSet } from 'prosemirror-view';
import { canJoin } from 'prosemirror-transform';
import { keyName } from 'w3c-keyname';
import { schema } from './schema.js';

const { nodes, marks } = schema;
const fresh = { attributes: [], startTag: null };
export const isMac = typeof navigator !== 'undefined' && /Mac|iP(hone|[oa]d)/.test(navigator.platform);

// ---- Marks ---------------------------------------------------------------------------------

/** Bold, italic, strikethrough, code: on the selection, or for what is typed next. */
export function toggleMark(type, attrs = null) {
  return (state, dispatch) => {
    const { from, to, empty, $from } = state.selection;
    if (!$from.parent.type.allowsMarkType(type)) return false;
    if (empty) {
      const stored = state.storedMarks ?? $from.marks();
      if (dispatch) dispatch(state.tr.setStoredMarks(type.isInSet(stored) ? type.removeFromSet(stored) : type.create(attrs).addToSet(stored)));
      return true;
    }
    if (dispatch) {
      const tr = state.tr;
      if (state.doc.rangeHasMark(from, to, type)) tr.removeMark(from, to, type);
      else tr.addMark(from, to, type.create(attrs));
      dispatch(tr.scrollIntoView());
    }
    return true;
  };
}

/** Whether `type` is active at the selection (for toolbar buttons). */
export function markActive(state, type) {
  const { from, to, empty, $from } = state.selection;
  if (empty) return Boolean(type.isInSet(state.storedMarks ?? $from.marks()));
  return state.doc.rangeHasMark(from, to, type);
}

// ---- Blocks --------------------------------------------------------------------------------

/** The top-level blocks the selection touches: [{node, pos}]. */
function selectedBlocks(state) {
  const out = [];
  const { from, to } = state.selection;
  state.doc.forEach((node, pos) => {
    if (pos + node.nodeSize > from && pos <= to) out.push({ node, pos });
  });
  if (out.length === 0) {
    const $from = state.selection.$from;
    if ($from.depth >= 1) out.push({ node: $from.node(1), pos: $from.before(1) });
  }
  return out;
}

/** Turns the selected text blocks into `type` with `attrs` (a list item, a heading, …). */
export function setBlock(type, attrs = {}) {
  return (state, dispatch) => {
    const blocks = selectedBlocks(state).filter((b) => b.node.isTextblock);
    if (blocks.length === 0) return false;
    if (dispatch) {
      const tr = state.tr;
      for (const { node, pos } of blocks) {
        if (node.type === type && type !== nodes.list_item && type !== nodes.heading) continue;
        if (type === nodes.code_block) {
          tr.setBlockType(pos, pos + node.nodeSize, type, { ...fresh, ...attrs });
        } else {
          tr.setNodeMarkup(tr.mapping.map(pos), type, { ...fresh, ...attrs });
        }
      }
      dispatch(tr.scrollIntoView());
    }
    return true;
  };
}

const bulletList = () => [{ ordered: false, attributes: [], startTag: null }];
const numberedList = (start = 1) => [{ ordered: true, attributes: start === 1 ? [] : [{ name: 'start', value: String(start) }], startTag: null }];

export const makeParagraph = setBlock(nodes.paragraph);
export const makeHeading = (level) => setBlock(nodes.heading, { level });
export const makeQuote = setBlock(nodes.quote);
export const makeCode = setBlock(nodes.code_block);
export const makeBullets = setBlock(nodes.list_item, { containers: bulletList(), checked: null });
export const makeNumbered = setBlock(nodes.list_item, { containers: numberedList(), checked: null });
export const makeChecklist = setBlock(nodes.list_item, { containers: bulletList(), checked: false });

/** Inserts a rule after the current block, and a paragraph after it to type on. */
export function insertRule(state, dispatch) {
  const { $from } = state.selection;
  if ($from.depth < 1) return false;
  if (dispatch) {
    const after = $from.after(1);
    const tr = state.tr.insert(after, [nodes.rule.create(), nodes.paragraph.create()]);
    tr.setSelection(TextSelection.create(tr.doc, after + 2));
    dispatch(tr.scrollIntoView());
  }
  return true;
}

/** Ticks or unticks the checklist item at `pos` (or the one holding the cursor). */
export function toggleChecked(pos = null) {
  return (state, dispatch) => {
    const at = pos ?? (state.selection.$from.depth >= 1 ? state.selection.$from.before(1) : null);
    const node = at === null ? null : state.doc.nodeAt(at);
    if (!node || node.type !== nodes.list_item || node.attrs.checked === null) return false;
    if (dispatch) dispatch(state.tr.setNodeMarkup(at, null, { ...node.attrs, checked: !node.attrs.checked }));
    return true;
  };
}

/** Tab: one level deeper in its list; Shift-Tab: one level out (out of the list at the top). */
export function indent(delta) {
  return (state, dispatch) => {
    const items = selectedBlocks(state).filter((b) => b.node.type === nodes.list_item);
    if (items.length === 0) return false;
    if (dispatch) {
      const tr = state.tr;
      for (const { node, pos } of items) {
        const containers = node.attrs.containers;
        if (delta > 0) {
          if (containers.length >= 8) continue;
          const last = containers[containers.length - 1];
          tr.setNodeMarkup(pos, null, { ...node.attrs, containers: [...containers, { ordered: last.ordered, attributes: [], startTag: null }] });
        } else if (containers.length > 1) {
          tr.setNodeMarkup(pos, null, { ...node.attrs, containers: containers.slice(0, -1) });
        } else {
          tr.setNodeMarkup(pos, nodes.paragraph, fresh);
        }
      }
      dispatch(tr.scrollIntoView());
    }
    return true;
  };
}

function deleteSelection(state, dispatch) {
  if (state.selection.empty) return false;
  if (dispatch) dispatch(state.tr.deleteSelection().scrollIntoView());
  return true;
}

/** Enter: a new block of the same kind (a list item continues its list; an empty one leaves it). */
export function splitBlock(state, dispatch) {
  const { $from, $to } = state.selection;
  if (state.selection instanceof NodeSelection) {
    if (dispatch) {
      const after = state.selection.to;
      const tr = state.tr.insert(after, nodes.paragraph.create());
      dispatch(tr.setSelection(TextSelection.create(tr.doc, after + 1)).scrollIntoView());
    }
    return true;
  }
  const block = $from.parent;
  if (block.type === nodes.code_block) {
    if (dispatch) dispatch(state.tr.insertText('\n').scrollIntoView());
    return true;
  }
  if (block.type === nodes.list_item && block.content.size === 0) return indent(-1)(state, dispatch);
  if ((block.type === nodes.quote || block.type === nodes.heading) && block.content.size === 0) {
    if (dispatch) dispatch(state.tr.setNodeMarkup($from.before(1), nodes.paragraph, fresh));
    return true;
  }
  if (dispatch) {
    const tr = state.tr;
    if (!state.selection.empty) tr.deleteSelection();
    const atEnd = $to.parentOffset === block.content.size;
    let next;
    if (block.type === nodes.list_item) {
      next = { type: nodes.list_item, attrs: { ...fresh, containers: block.attrs.containers, checked: block.attrs.checked === null ? null : false } };
    } else if (block.type === nodes.heading && atEnd) {
      next = { type: nodes.paragraph, attrs: fresh };
    } else {
      next = { type: block.type, attrs: { ...block.attrs, ...fresh } };
    }
    tr.split(tr.mapping.map($from.pos), 1, [next]);
    dispatch(tr.scrollIntoView());
  }
  return true;
}

/** Shift-Enter: a line break inside the block. */
export function hardBreak(state, dispatch) {
  const { $from } = state.selection;
  if ($from.parent.type === nodes.code_block) {
    if (dispatch) dispatch(state.tr.insertText('\n').scrollIntoView());
    return true;
  }
  if (!$from.parent.isTextblock) return false;
  if (dispatch) dispatch(state.tr.replaceSelectionWith(nodes.hard_break.create()).scrollIntoView());
  return true;
}

/**
 * Backspace at the start of a block: a list item, heading, quote or code block becomes a
 * paragraph first (a nested item moves out one level); a paragraph joins the block before it,
 * or selects a rule or kept-as-written block before it.
 */
export function backspace(state, dispatch) {
  if (deleteSelection(state, dispatch)) return true;
  const { $from, empty } = state.selection;
  if (!empty || $from.parentOffset > 0 || $from.depth < 1) return false;
  const block = $from.parent;
  const pos = $from.before(1);
  if (block.type === nodes.list_item) return indent(-1)(state, dispatch);
  if (block.type !== nodes.paragraph) {
    if (dispatch) dispatch(state.tr.setNodeMarkup(pos, nodes.paragraph, fresh));
    return true;
  }
  if (pos === 0) return true;
  const before = state.doc.resolve(pos).nodeBefore;
  if (before && before.isAtom) {
    if (dispatch) {
      if (block.content.size === 0) dispatch(state.tr.delete(pos, pos + block.nodeSize).setSelection(NodeSelection.create(state.doc, pos - before.nodeSize)));
      else dispatch(state.tr.setSelection(NodeSelection.create(state.doc, pos - before.nodeSize)));
    }
    return true;
  }
  if (before && before.type === nodes.code_block && block.content.size === 0) {
    if (dispatch) dispatch(state.tr.delete(pos, pos + block.nodeSize).setSelection(Selection.near(state.doc.resolve(pos - 1), -1)));
    return true;
  }
  if (!canJoin(state.doc, pos)) return false;
  if (dispatch) dispatch(state.tr.join(pos).scrollIntoView());
  return true;
}

/** Delete at the end of a block: the next block joins this one (or is selected, if it is a rule). */
export function deleteForward(state, dispatch) {
  if (deleteSelection(state, dispatch)) return true;
  const { $from, empty } = state.selection;
  if (!empty || $from.depth < 1 || $from.parentOffset < $from.parent.content.size) return false;
  const after = $from.after(1);
  if (after >= state.doc.content.size) return true;
  const next = state.doc.nodeAt(after);
  if (next.isAtom) {
    if (dispatch) dispatch(state.tr.setSelection(NodeSelection.create(state.doc, after)));
    return true;
  }
  if (!canJoin(state.doc, after)) return false;
  if (dispatch) dispatch(state.tr.join(after).scrollIntoView());
  return true;
}

/**
 * Ctrl+Home / Ctrl+End (Cmd+Up / Cmd+Down on a Mac): the start or end of the note, with Shift
 * extending the selection. Done here rather than by the browser, which only knows the blocks it
 * has drawn (a long note is drawn in a window: blockwindow.js).
 */
export function selectEdge(toEnd, extend) {
  return (state, dispatch) => {
    const edge = toEnd ? Selection.atEnd(state.doc) : Selection.atStart(state.doc);
    if (dispatch) {
      const selection = extend && edge instanceof TextSelection
        ? TextSelection.create(state.doc, state.selection.anchor, edge.head)
        : edge;
      dispatch(state.tr.setSelection(selection).scrollIntoView());
    }
    return true;
  };
}

// ---- Input rules -----------------------------------------------------------------------------

/**
 * Markdown-style shortcuts typed at the start of a paragraph: `# `, `## `, `### ` headings,
 * `- `/`* ` bullets, `1. ` numbers, `[ ] `/`[x] ` checklists, `> ` quotes, ``` ``` ``` code,
 * `---` a rule. Undo right after one turns the block back (the marker typed before the space returns).
 */
const RULES = [
  { match: /^(#{1,3}) $/, run: (m) => ({ type: nodes.heading, attrs: { level: m[1].length } }) },
  { match: /^[-*] $/, run: () => ({ type: nodes.list_item, attrs: { containers: bulletList(), checked: null } }) },
  { match: /^(\d{1,4})[.)] $/, run: (m) => ({ type: nodes.list_item, attrs: { containers: numberedList(Number(m[1])), checked: null } }) },
  { match: /^(?:[-*] )?\[( |x|X)\] $/, run: (m) => ({ type: nodes.list_item, attrs: { containers: bulletList(), checked: m[1] !== ' ' } }) },
  { match: /^> $/, run: () => ({ type: nodes.quote, attrs: {} }) },
  { match: /^```$/, run: () => ({ type: nodes.code_block, attrs: {} }) },
];

export function handleTextInput(view, from, to, text) {
  const { state } = view;
  const $from = state.doc.resolve(from);
  const block = $from.parent;
  if (from !== to || $from.depth !== 1) return false;
  const before = block.textBetween(0, $from.parentOffset, null, '\ufffc') + text;
  if (before.length > 8) return false;
  const inList = block.type === nodes.list_item && block.attrs.checked === null;
  if (block.type !== nodes.paragraph && !inList) return false;
  if (before === '---' && block.type === nodes.paragraph) {
    const start = $from.before(1);
    const tr = state.tr.replaceWith(start, start + block.nodeSize, [nodes.rule.create(), nodes.paragraph.create()]);
    tr.setSelection(TextSelection.create(tr.doc, start + 2));
    view.dispatch(tr.scrollIntoView());
    return true;
  }
  for (const rule of RULES) {
    const m = before.match(rule.match);
    if (!m) continue;
    const target = rule.run(m);
    if (inList && target.type !== nodes.list_item) return false;
    if (inList && target.attrs.checked === null) return false;
    const start = $from.start();
    const tr = state.tr.delete(start, from);
    const attrs = inList ? { ...block.attrs, ...fresh, checked: target.attrs.checked } : { ...fresh, ...target.attrs };
    if (target.type === nodes.code_block) tr.setBlockType(start, start, target.type, attrs);
    else tr.setNodeMarkup($from.before(1), target.type, attrs);
    tr.setMeta(historyKey, { inputRule: { text: before, from: start } });
    view.dispatch(tr.scrollIntoView());
    return true;
  }
  return false;
}

// ---- History -------------------------------------------------------------------------------

/**
 * Undo and redo by steps: each entry holds the inverted steps of a group of edits (typing
 * within half a second of the last edit groups with it) and the selection before them.
 * Changes merged in from other devices are not undoable; the entries are mapped through them,
 * so undo takes back the person's own edits and leaves the other device's in place.
 */
export const historyKey = new PluginKey('notesd-history');
const GROUP_MS = 500;
const DEPTH = 200;

function mapEntries(entries, mapping) {
  return entries.map((entry) => ({
    steps: entry.steps.map((s) => s.map(mapping)).filter(Boolean),
    selection: entry.selection.map(mapping),
  })).filter((e) => e.steps.length > 0);
}

export const history = new Plugin({
  key: historyKey,
  state: {
    init: () => ({ done: [], undone: [], last: 0 }),
    apply(tr, value, oldState) {
      const meta = tr.getMeta(historyKey);
      if (meta?.reset) return { done: [], undone: [], last: 0 };
      if (meta?.set) return meta.set;
      if (!tr.docChanged) return value;
      if (tr.getMeta('addToHistory') === false) {
        return { done: mapEntries(value.done, tr.mapping), undone: mapEntries(value.undone, tr.mapping), last: 0 };
      }
      const inverted = [];
      for (let i = tr.steps.length - 1; i >= 0; i -= 1) inverted.push(tr.steps[i].invert(tr.docs[i]));
      const now = Date.now();
      const done = value.done.slice();
      if (now - value.last < GROUP_MS && done.length > 0 && !meta?.inputRule) {
        const top = done[done.length - 1];
        done[done.length - 1] = { steps: [...inverted, ...top.steps], selection: top.selection };
      } else {
        done.push({ steps: inverted, selection: oldState.selection.getBookmark() });
        if (done.length > DEPTH) done.shift();
      }
      return { done, undone: [], last: meta?.inputRule ? 0 : now };
    },
  },
});

function travel(fromKey, toKey) {
  return (state, dispatch) => {
    const value = historyKey.getState(state);
    const from = value[fromKey];
    if (from.length === 0) return false;
    if (dispatch) {
      const entry = from[from.length - 1];
      const tr = state.tr;
      for (const step of entry.steps) tr.maybeStep(step);
      const inverted = [];
      for (let i = tr.steps.length - 1; i >= 0; i -= 1) inverted.push(tr.steps[i].invert(tr.docs[i]));
      const selection = entry.selection.resolve(tr.doc);
      tr.setSelection(selection);
      const back = { steps: inverted, selection: state.selection.getBookmark() };
      const next = { ...value, last: 0, [fromKey]: from.slice(0, -1), [toKey]: [...value[toKey], back] };
      tr.setMeta(historyKey, { set: next });
      dispatch(tr.scrollIntoView());
    }
    return true;
  };
}

export const undo = travel('done', 'undone');
export const redo = travel('undone', 'done');

// ---- Numbers -------------------------------------------------------------------------------

/**
 * The numbers of numbered items (they are not part of the model: notesd's lists count
 * themselves). Counted again only when a change could renumber: typing inside blocks keeps
 * every block's kind and list, so the numbers are only moved along.
 */
export const numbering = new Plugin({
  state: {
    init: (_, state) => numberDecorations(state.doc),
    apply: (tr, value, before) => {
      if (!tr.docChanged) return value;
      return sameLists(before.doc, tr.doc) ? value.map(tr.mapping, tr.doc) : numberDecorations(tr.doc);
    },
  },
  props: { decorations(state) { return this.getState(state); } },
});

/** Whether two documents have the same blocks in the same lists (their text aside). */
export function sameLists(a, b) {
  if (a.childCount !== b.childCount) return false;
  const start = a.content.findDiffStart(b.content);
  if (start === null) return true;
  const end = a.content.findDiffEnd(b.content);
  const from = a.resolve(start).index(0);
  const to = Math.max(from + 1, end ? a.resolve(Math.min(end.a, a.content.size)).index(0) + 1 : a.childCount);
  for (let i = from; i < Math.min(to, a.childCount); i += 1) {
    const x = a.child(i);
    const y = b.child(i);
    if (x.type !== y.type) return false;
    // ProseMirror keeps a node's attrs object when only its content changes.
    if (x.type === nodes.list_item && x.attrs !== y.attrs
      && (x.attrs.checked !== y.attrs.checked || JSON.stringify(x.attrs.containers) !== JSON.stringify(y.attrs.containers))) return false;
  }
  return true;
}

function numberDecorations(doc) {
  const decorations = [];
  let counters = [];
  let previous = null;
  doc.forEach((node, pos) => {
    if (node.type !== nodes.list_item) { counters = []; previous = null; return; }
    const containers = node.attrs.containers;
    const depth = containers.length;
    const sameList = previous && previous.length >= depth
      && containers.every((c, i) => c.ordered === previous[i].ordered && JSON.stringify(c.attributes) === JSON.stringify(previous[i].attributes));
    counters = counters.slice(0, depth);
    const start = Number(containers[depth - 1].attributes.find((a) => a.name === 'start')?.value ?? 1) || 1;
    counters[depth - 1] = sameList && counters[depth - 1] !== undefined ? counters[depth - 1] + 1 : start;
    if (containers[depth - 1].ordered && node.attrs.checked === null) {
      decorations.push(Decoration.node(pos, pos + node.nodeSize, { 'data-number': `${counters[depth - 1]}.` }));
    }
    previous = containers;
  });
  return DecorationSet.create(doc, decorations);
}

// ---- Keys ----------------------------------------------------------------------------------

/** The key bindings, by w3c-keyname's names: `Mod-` is Cmd on a Mac and Ctrl elsewhere. */
export function bindings(extra = {}) {
  return {
    Enter: splitBlock,
    'Shift-Enter': hardBreak,
    Backspace: backspace,
    Delete: deleteForward,
    Tab: indent(1),
    'Shift-Tab': indent(-1),
    'Mod-z': undo,
    'Shift-Mod-z': redo,
    'Mod-y': redo,
    'Mod-b': toggleMark(marks.strong),
    'Mod-i': toggleMark(marks.em),
    'Shift-Mod-x': toggleMark(marks.strike),
    'Mod-e': toggleMark(marks.code),
    'Mod-Alt-0': makeParagraph,
    'Mod-Alt-1': makeHeading(1),
    'Mod-Alt-2': makeHeading(2),
    'Mod-Alt-3': makeHeading(3),
    'Shift-Mod-8': makeBullets,
    'Shift-Mod-7': makeNumbered,
    'Shift-Mod-9': makeChecklist,
    'Mod-Enter': toggleChecked(),
    'Mod-Home': selectEdge(false, false),
    'Mod-End': selectEdge(true, false),
    'Shift-Mod-Home': selectEdge(false, true),
    'Shift-Mod-End': selectEdge(true, true),
    ...(isMac ? {
      'Mod-ArrowUp': selectEdge(false, false),
      'Mod-ArrowDown': selectEdge(true, false),
      'Shift-Mod-ArrowUp': selectEdge(false, true),
      'Shift-Mod-ArrowDown': selectEdge(true, true),
    } : {}),
    ...extra,
  };
}

function normalise(name) {
  const parts = name.split(/-(?!$)/);
  let key = parts[parts.length - 1];
  if (key === 'Space') key = ' ';
  const mods = new Set(parts.slice(0, -1).map((m) => (m === 'Mod' ? (isMac ? 'Meta' : 'Ctrl') : m)));
  return ['Alt', 'Ctrl', 'Meta', 'Shift'].filter((m) => mods.has(m)).join('-') + (mods.size ? '-' : '') + key;
}

/** A plugin running `map`'s commands on keydown. */
export function keymap(map) {
  const table = new Map(Object.entries(map).map(([name, command]) => [normalise(name), command]));
  return new Plugin({
    props: {
      handleKeyDown(view, event) {
        let key = keyName(event);
        if (key.length === 1 && key !== ' ') key = key.toLowerCase();
        const mods = [event.altKey && 'Alt', event.ctrlKey && 'Ctrl', event.metaKey && 'Meta', event.shiftKey && 'Shift'].filter(Boolean);
        let command = table.get(mods.join('-') + (mods.length ? '-' : '') + key);
        if (!command && event.shiftKey && key.length === 1) {
          // Shift-Mod-8 arrives as "*" on most layouts: try the key's code too.
          const digit = /^Digit(\d)$/.exec(event.code)?.[1];
          if (digit) command = table.get(mods.join('-') + '-' + digit);
        }
        if (!command && event.altKey && /^Digit(\d)$/.test(event.code)) {
          command = table.get(mods.join('-') + '-' + event.code.slice(5));
        }
        return command ? command(view.state, view.dispatch, view) : false;
      },
    },
  });
}
