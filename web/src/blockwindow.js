// Long notes are drawn in a window (docs/web-app.md, "Long notes"). Every block of the note is
// in the editor and in the DOM, but in a note of WINDOW_MIN_BLOCKS blocks or more only the
// blocks around what is on screen, around the selection's two ends, are laid out; each run of
// the others is one empty box of their height (the first of them, its content skipped) and
// `display: none` for the rest. Chromium lays out, paints and commits every box of a long
// contenteditable on each keystroke, whether it is on screen or not, and `content-visibility:
// auto` does not remove the boxes (docs/benchmarks.md): so typing in a 2,000-block note cost
// twice a frame, and opening one a layout of all 2,000 blocks.
//
// The window is a style sheet of `:nth-child` ranges (no attribute of ProseMirror's DOM
// changes, so the editor's DOM observer sees nothing). It moves when the note scrolls near
// its edge, and before ProseMirror scrolls the selection into view. Ctrl+F (the browser's find)
// draws the whole note until the next key or click in it, so find sees all of it; printing
// draws the whole note too.

import { Plugin } from 'prosemirror-state';

export const WINDOW_MIN_BLOCKS = 400;
/** Blocks drawn on each side of a selection end, for the arrow keys' next line. */
const SELECTION_MARGIN = 3;
/** At least this many blocks are drawn beyond each edge of the screen. */
const MIN_MARGIN = 20;
/** Gaps shorter than this are drawn rather than replaced by a box. */
const MIN_GAP = 8;

// ---- The window, without a DOM (web/test/blockwindow.test.js) --------------------------------

/**
 * The block ranges to draw, sorted and merged: `view` [first, last] of what is on screen
 * (already widened by its margin), and the blocks of the selection's `anchor` and `head`.
 * Ranges are [start, end) block indices of a note of `count` blocks.
 */
export function drawnRanges(count, view, anchor, head) {
  const ranges = [
    [view[0], view[1] + 1],
    [anchor - SELECTION_MARGIN, anchor + SELECTION_MARGIN + 1],
    [head - SELECTION_MARGIN, head + SELECTION_MARGIN + 1],
  ].map(([s, e]) => [Math.max(0, s), Math.min(count, e)]).filter(([s, e]) => s < e).sort((x, y) => x[0] - y[0]);
  const merged = [];
  for (const range of ranges) {
    const last = merged[merged.length - 1];
    if (last && range[0] - last[1] < MIN_GAP) last[1] = Math.max(last[1], range[1]);
    else merged.push([...range]);
  }
  // A short run at either end of the note is drawn too.
  if (merged.length && merged[0][0] < MIN_GAP) merged[0][0] = 0;
  if (merged.length && count - merged[merged.length - 1][1] < MIN_GAP) merged[merged.length - 1][1] = count;
  return merged;
}

/** The hidden runs between `ranges`: [start, end) each. */
export function gapsOf(count, ranges) {
  const gaps = [];
  let at = 0;
  for (const [s, e] of ranges) {
    if (s > at) gaps.push([at, s]);
    at = e;
  }
  if (at < count) gaps.push([at, count]);
  return gaps;
}

/**
 * The style sheet that draws only `ranges`: each gap is its first block turned into an empty
 * box of the gap's height (`heightOf(i)` for each block in it) and the rest not displayed.
 */
export function windowRules(count, ranges, heightOf, scope = '.editor-body > .ProseMirror') {
  const rules = [];
  for (const [s, e] of gapsOf(count, ranges)) {
    let height = 0;
    for (let i = s; i < e; i += 1) height += heightOf(i);
    rules.push(`${scope} > :nth-child(${s + 1}) { content-visibility: hidden !important; block-size: ${Math.round(height)}px !important; `
      + 'margin: 0 !important; padding: 0 !important; border: 0 !important; background: none !important; }');
    if (e > s + 1) rules.push(`${scope} > :nth-child(n+${s + 2}):nth-child(-n+${e}) { display: none !important; }`);
  }
  return rules.length ? `@media screen {\n${rules.join('\n')}\n}` : '';
}

/** A block's height before it was ever drawn: a guess from its kind and length, in pixels. */
export function estimatedHeight(node) {
  switch (node.type.name) {
    case 'heading': return 44;
    case 'rule': return 34;
    case 'opaque': return 60;
    case 'code_block': return 32 + 22 * (node.textContent.split('\n').length);
    case 'list_item': return 27 + 24 * Math.floor(node.content.size / 90);
    default: return 34 + 24 * Math.floor(node.content.size / 90);
  }
}

// ---- The plugin --------------------------------------------------------------------------------

/** The window as a ProseMirror plugin; `scroller` is the element the note scrolls in. */
export function blockWindow(scroller) {
  return new Plugin({
    view: (view) => new BlockWindow(view, scroller),
    props: {
      handleKeyDown(view, event) {
        const win = windows.get(view);
        if (!win) return false;
        if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === 'f') win.drawAll();
        else if (!['Control', 'Meta', 'Shift', 'Alt'].includes(event.key)) win.drawWindow();
        return false;
      },
      handleDOMEvents: {
        mousedown(view) { windows.get(view)?.drawWindow(); return false; },
      },
    },
  });
}

const windows = new WeakMap();

class BlockWindow {
  constructor(view, scroller) {
    this.view = view;
    this.scroller = scroller;
    this.sheet = new CSSStyleSheet();
    this.css = '';
    this.all = false;          // drawing the whole note (for the browser's find)
    this.heights = new WeakMap(); // node → its height when last drawn
    this.range = null;         // [first, last] of the blocks drawn for the screen, margins included
    this.ranges = [];          // what the style sheet draws now
    this.anchor = null;        // {node, offset}: the first block on screen, when last scrolled
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, this.sheet];
    windows.set(view, this);
    this.onScroll = () => this.scrolled();
    scroller.addEventListener('scroll', this.onScroll, { passive: true });
    window.addEventListener('resize', this.onScroll);
    this.frame = null;
    this.update(view, null);
  }

  /**
   * Follows the screen once the next frame is painted, when the window was set without knowing
   * where the screen is: reading the layout any earlier would lay the note out a second time
   * before its first frame.
   */
  checkSoon() {
    if (this.frame !== null) return;
    this.frame = { raf: requestAnimationFrame(() => {
      this.frame = { timer: setTimeout(() => { this.frame = null; this.scrolled(); }, 0) };
    }) };
  }

  get active() { return this.view.state.doc.childCount >= WINDOW_MIN_BLOCKS && !this.all; }

  /** Blocks beyond each edge of the screen: about a screen's worth. */
  margin() { return Math.max(MIN_MARGIN, Math.ceil(window.innerHeight / 30)); }

  update(view, prev) {
    const { doc, selection } = view.state;
    if (!this.active) {
      if (!this.all) this.range = null;
      this.apply([]);
      return;
    }
    const count = doc.childCount;
    if (!this.range) {
      // Just opened (or just grown long): the top of the note, nothing read from the layout,
      // which is not made yet; the next frame moves it to the screen if that is elsewhere
      // (the pane kept its place, a paste made the note long).
      this.range = [0, 2 * this.margin()];
      this.checkSoon();
    } else if (prev && prev.doc !== doc && prev.doc.childCount !== count) {
      // Blocks came or went: the window keeps the blocks it had.
      const at = prev.doc.content.findDiffStart(doc.content);
      if (at !== null) {
        const changed = prev.doc.resolve(Math.min(at, prev.doc.content.size)).index(0);
        const delta = count - prev.doc.childCount;
        this.range = this.range.map((i) => (i > changed ? Math.max(changed, i + delta) : i));
      }
    }
    const head = blockIndex(doc, selection.head);
    const anchor = blockIndex(doc, selection.anchor);
    const margin = this.margin();
    if (prev && view.state.scrollToSelection > prev.scrollToSelection && (head < this.range[0] + margin / 2 || head > this.range[1] - margin / 2)) {
      // ProseMirror is about to scroll the selection into view: draw what will be on screen.
      this.range = [head - 2 * margin, head + 2 * margin];
    }
    const ranges = drawnRanges(count, this.range, anchor, head);
    // Typing changes a drawn block only: the boxes of the gaps stay as they are.
    if (prev && prev.doc.childCount === count && sameRanges(ranges, this.ranges) && gapsUnchanged(prev.doc, doc, ranges)) return;
    this.apply(ranges);
    // Blocks came or went elsewhere (another device's change, an undo): what was on screen
    // stays where it was, unless the selection is being scrolled to.
    if (prev && prev.doc !== doc && view.state.scrollToSelection === prev.scrollToSelection) this.restoreAnchor();
  }

  /** Remembers where the first block on screen is, to keep it there through changes above it. */
  keepAnchor(index) {
    const ranges = this.ranges;
    if (!ranges.some(([s, e]) => index >= s && index < e)) { this.anchor = null; return; }
    const dom = this.view.dom.children[index];
    this.anchor = { node: this.view.state.doc.child(index), offset: dom.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top };
  }

  restoreAnchor() {
    const kept = this.anchor;
    if (!kept) return;
    const doc = this.view.state.doc;
    let index = -1;
    for (let i = 0; i < doc.childCount; i += 1) if (doc.child(i) === kept.node) { index = i; break; }
    if (index < 0 || !this.ranges.some(([s, e]) => index >= s && index < e) || this.view.dom.children.length !== doc.childCount) return;
    const offset = this.view.dom.children[index].getBoundingClientRect().top - this.scroller.getBoundingClientRect().top;
    if (Math.abs(offset - kept.offset) >= 1) this.scroller.scrollTop += offset - kept.offset;
  }

  /** The note scrolled: move the window when what is on screen comes near its edge. */
  scrolled() {
    // Not while another screen (compare, history) has the pane and the editor is not on it.
    if (!this.active || !this.view.dom.isConnected) return;
    this.measure();
    const seen = this.onScreen();
    if (!seen) return;
    this.keepAnchor(seen[0]);
    const margin = this.margin();
    const count = this.view.state.doc.childCount;
    const [first, last] = this.range;
    if ((seen[0] < first + margin / 2 && first > 0) || (seen[1] > last - margin / 2 && last < count - 1)) {
      this.range = [seen[0] - margin, seen[1] + margin];
      const { doc, selection } = this.view.state;
      this.apply(drawnRanges(count, this.range, blockIndex(doc, selection.anchor), blockIndex(doc, selection.head)));
      // Blocks drawn above the screen may not be as tall as their boxes were: the first block
      // on screen stays put (or, scrolled into a box, becomes the one that will).
      if (this.anchor) this.restoreAnchor();
      else this.keepAnchor(seen[0]);
    }
  }

  /** The first and last block on screen, from the drawn blocks and the gaps' boxes. */
  onScreen() {
    const children = this.view.dom.children;
    const doc = this.view.state.doc;
    if (children.length !== doc.childCount) return null;
    const box = this.scroller.getBoundingClientRect();
    const top = box.top;
    const bottom = box.top + this.scroller.clientHeight;
    let first = null;
    let last = null;
    const seen = (i) => { if (first === null) first = i; last = i; };
    const segments = [...this.ranges.map(([s, e]) => ({ s, e, drawn: true })), ...gapsOf(doc.childCount, this.ranges).map(([s, e]) => ({ s, e, drawn: false }))]
      .sort((x, y) => x.s - y.s);
    for (const { s, e, drawn } of segments) {
      if (drawn) {
        if (children[e - 1].getBoundingClientRect().bottom < top) continue;
        if (children[s].getBoundingClientRect().top > bottom) break;
        for (let i = s; i < e; i += 1) {
          const rect = children[i].getBoundingClientRect();
          if (rect.bottom >= top && rect.top <= bottom) seen(i);
          else if (rect.top > bottom) break;
        }
      } else {
        const rect = children[s].getBoundingClientRect();
        if (rect.bottom < top) continue;
        if (rect.top > bottom) break;
        let y = rect.top;
        for (let i = s; i < e && y <= bottom; i += 1) {
          const next = y + this.heightOf(doc.child(i));
          if (next >= top) seen(i);
          y = next;
        }
      }
    }
    return first === null ? null : [first, last];
  }

  /** Keeps the heights of the drawn blocks, for their boxes once they are out of the window. */
  measure() {
    const children = this.view.dom.children;
    const doc = this.view.state.doc;
    if (children.length !== doc.childCount) return;
    const ranges = this.ranges.length ? this.ranges : [[0, doc.childCount]];
    for (const [s, e] of ranges) {
      let top = children[s].getBoundingClientRect().top;
      for (let i = s + 1; i < e; i += 1) {
        const next = children[i].getBoundingClientRect().top;
        this.heights.set(doc.child(i - 1), next - top);
        top = next;
      }
    }
  }

  heightOf(node) { return this.heights.get(node) ?? estimatedHeight(node); }

  /** The whole note drawn, until the next key or click in it (the browser's find reads it all). */
  drawAll() {
    if (this.all || this.view.state.doc.childCount < WINDOW_MIN_BLOCKS) return;
    this.measure();
    this.all = true;
    this.apply([]);
  }

  drawWindow() {
    if (!this.all) return;
    this.measure();
    this.all = false;
    this.range = this.onScreenWhole() ?? this.range;
    this.update(this.view, null);
  }

  /** What is on screen while every block is drawn, widened by the margin. */
  onScreenWhole() {
    this.ranges = [[0, this.view.state.doc.childCount]];
    const seen = this.onScreen();
    return seen && [seen[0] - this.margin(), seen[1] + this.margin()];
  }

  apply(ranges) {
    const doc = this.view.state.doc;
    const css = ranges.length ? windowRules(doc.childCount, ranges, (i) => this.heightOf(doc.child(i))) : '';
    this.ranges = ranges.length ? ranges : [[0, doc.childCount]];
    if (css === this.css) return;
    this.css = css;
    this.sheet.replaceSync(css);
  }

  destroy() {
    if (this.frame?.raf) cancelAnimationFrame(this.frame.raf);
    if (this.frame?.timer) clearTimeout(this.frame.timer);
    this.scroller.removeEventListener('scroll', this.onScroll);
    window.removeEventListener('resize', this.onScroll);
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== this.sheet);
    windows.delete(this.view);
  }
}

/** The index of the top-level block holding `pos`. */
function blockIndex(doc, pos) {
  return Math.min(doc.childCount - 1, doc.resolve(Math.min(pos, doc.content.size)).index(0));
}

function sameRanges(a, b) {
  return a.length === b.length && a.every(([s, e], i) => s === b[i][0] && e === b[i][1]);
}

/** Whether every block outside `ranges` is the same node in both documents. */
function gapsUnchanged(before, after, ranges) {
  for (const [s, e] of gapsOf(after.childCount, ranges)) {
    for (let i = s; i < e; i += 1) if (before.child(i) !== after.child(i)) return false;
  }
  return true;
}
