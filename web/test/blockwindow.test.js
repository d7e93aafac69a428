// The window a long note is drawn in (blockwindow.js): which blocks are drawn, and the style
// sheet that hides the others behind boxes of their height.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drawnRanges, gapsOf, windowRules, estimatedHeight } from '../src/blockwindow.js';
import { OpenedNote } from '../src/blockdoc.js';

test('the screen’s blocks and both ends of the selection are drawn, close ranges merged', () => {
  // On screen 100–160, the selection from 30 to 500: three ranges.
  assert.deepEqual(drawnRanges(2000, [100, 160], 30, 500), [[27, 34], [100, 161], [497, 504]]);
  // A selection end a few blocks past the screen joins its range rather than leaving a gap.
  assert.deepEqual(drawnRanges(2000, [100, 160], 165, 165), [[100, 169]]);
  // Near the start or the end of the note, the short rest is drawn too.
  assert.deepEqual(drawnRanges(2000, [5, 60], 10, 10), [[0, 61]]);
  assert.deepEqual(drawnRanges(2000, [1940, 1995], 1990, 1990), [[1940, 2000]]);
  // Ranges past either end are clipped to the note.
  assert.deepEqual(drawnRanges(500, [-40, 600], 0, 499), [[0, 500]]);
});

test('the gaps are what is not drawn', () => {
  assert.deepEqual(gapsOf(2000, [[27, 34], [100, 161]]), [[0, 27], [34, 100], [161, 2000]]);
  assert.deepEqual(gapsOf(100, [[0, 100]]), []);
});

test('each gap is its first block turned into a box of the gap’s height, the rest not displayed', () => {
  const css = windowRules(10, [[2, 5]], (i) => 10 + i);
  const rules = css.split('\n');
  assert.equal(rules[0], '@media screen {');
  // Blocks 0 and 1 (heights 10 and 11): the first is a box of 21 px, the second hidden.
  assert.match(rules[1], /^\.editor-body > \.ProseMirror > :nth-child\(1\) \{ content-visibility: hidden !important; block-size: 21px !important;/);
  assert.equal(rules[2], '.editor-body > .ProseMirror > :nth-child(n+2):nth-child(-n+2) { display: none !important; }');
  // Blocks 5–9 (15 + 16 + 17 + 18 + 19 = 85 px).
  assert.match(rules[3], /:nth-child\(6\) \{ content-visibility: hidden !important; block-size: 85px !important;/);
  assert.equal(rules[4], '.editor-body > .ProseMirror > :nth-child(n+7):nth-child(-n+10) { display: none !important; }');
  assert.equal(rules[5], '}');
  // Everything drawn: no rules at all.
  assert.equal(windowRules(10, [[0, 10]], () => 10), '');
});

test('a block never drawn gets a height from its kind and length', () => {
  const { doc } = new OpenedNote(`<h2>Title</h2><p>short</p><p>${'long words '.repeat(40)}</p><ul><li>item</li></ul><hr>`);
  const [heading, short, long, item, rule] = [0, 1, 2, 3, 4].map((i) => estimatedHeight(doc.child(i)));
  assert.ok(heading > short && long > short && item < short && rule > 0, JSON.stringify({ heading, short, long, item, rule }));
});
