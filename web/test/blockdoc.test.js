// Opening a note in the editor and saving it: untouched blocks come back byte for byte, and
// an edit to one paragraph changes exactly one block.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EditorState, TextSelection } from 'prosemirror-state';
import { OpenedNote, nodeToBlock, mergeServer, diffBlocks, pastedNodes, pastedTextNodes } from '../src/blockdoc.js';
import { split, join, blockKey } from '../src/htmlblocks.js';
import { schema } from '../src/schema.js';
import { loserDevice, compareRows, takeHunk, originalTitle, copyTitle } from '../src/compare.js';

/** HTML as notesd stores it (its join of its split), written by several editors and imports. */
const notes = {
  // A rich-text editor that writes <b>, colours and Quill checklists.
  editor: '<h1>Garden</h1>\n<p class="intro">Plant <b>tulips</b> and <span style="color: rgb(230, 0, 0);">red</span> poppies.</p>\n<p>Water <i>daily</i> in <strong>July</strong>.</p>\n<ul data-checked="true"><li>Buy soil</li></ul>\n<ul data-checked="false"><li>Dig beds</li></ul>\n<p>Last paragraph &amp; done.</p>',
  // Markdown, as notesd's importer writes it (cmark-gfm's HTML).
  markdown: '<h2>Shopping</h2>\n<ul>\n<li><input type="checkbox" checked="" disabled="" /> eggs</li>\n<li><input type="checkbox" disabled="" /> flour</li>\n</ul>\n<p>Use <em>fresh</em> <code>eggs</code>, see <a href="https://example.org">the recipe</a>.</p>\n<blockquote>\n<p>Quoted</p>\n</blockquote>\n<pre><code class="language-sh">make bread\n</code></pre>\n<hr />\n<ol start="2">\n<li>second</li>\n<li>third\n<ol>\n<li>nested</li>\n</ol>\n</li>\n</ol>',
  // Evernote .enex bodies: divs per line, fonts and spans, en-todo.
  enex: '<div><font color="#ff0000">Red line</font></div>\n<div><br/></div>\n<div>Second <span style="font-weight: bold;">line</span></div>\n<div>Third line</div>\n<table><tr><td>a</td><td>b</td></tr></table>',
};

function asStored(html) {
  // notes.get answers join(split(body)): normalise the fixtures the same way.
  return join(split(html).map((b) => ({ ...b, startTag: null, containers: b.containers?.map((c) => ({ ...c, startTag: null })) })));
}

/** Replaces the text of the top-level node at `index` with `text`. */
function editBlock(state, index, text) {
  let pos = 0;
  for (let i = 0; i < index; i += 1) pos += state.doc.child(i).nodeSize;
  const node = state.doc.child(index);
  const tr = state.tr.replaceWith(pos + 1, pos + node.nodeSize - 1, schema.text(text));
  return state.apply(tr);
}

function changedBlocks(before, after) {
  const a = split(before).map(blockKey);
  const b = split(after).map(blockKey);
  assert.equal(a.length, b.length, 'same number of blocks');
  return a.map((key, i) => (key === b[i] ? null : i)).filter((i) => i !== null);
}

for (const [name, source] of Object.entries(notes)) {
  const stored = asStored(source);

  test(`${name}: opening and saving without an edit gives the stored HTML byte for byte`, () => {
    const opened = new OpenedNote(stored);
    const state = EditorState.create({ doc: opened.doc });
    assert.equal(opened.htmlOf(state.doc), stored);
    // Even a transaction that changed nothing, or moved the cursor, rewrites nothing.
    const moved = state.apply(state.tr.setSelection(TextSelection.create(state.doc, 2)));
    assert.equal(opened.htmlOf(moved.doc), stored);
  });

  test(`${name}: editing one paragraph changes exactly one block`, () => {
    const opened = new OpenedNote(stored);
    let state = EditorState.create({ doc: opened.doc });
    const blocks = split(stored);
    const target = blocks.findIndex((b) => b.kind === 'paragraph' || b.kind === 'division' || b.kind === 'listItem');
    state = editBlock(state, target, 'Edited text');
    const saved = opened.htmlOf(state.doc);
    assert.deepEqual(changedBlocks(stored, saved), [target]);
    // Every other block is the same block, and the untouched HTML is kept as it was.
    const after = split(saved);
    for (let i = 0; i < blocks.length; i += 1) {
      if (i !== target) assert.equal(blockKey(after[i]), blockKey(blocks[i]));
    }
    assert.equal(after[target].content, 'Edited text');
  });
}

test('<b> stays <b> and colours stay when a neighbouring paragraph is edited', () => {
  const stored = asStored(notes.editor);
  const opened = new OpenedNote(stored);
  let state = EditorState.create({ doc: opened.doc });
  state = editBlock(state, 2, 'Water weekly.');
  const saved = opened.htmlOf(state.doc);
  assert.ok(saved.includes('Plant <b>tulips</b> and <span style="color: rgb(230, 0, 0);">red</span> poppies.'));
  assert.ok(saved.includes('<ul data-checked="true"><li>Buy soil</li></ul>'));
  assert.deepEqual(changedBlocks(stored, saved), [2]);
});

test('an edited block keeps its own element attributes and the tags its marks were written with', () => {
  const opened = new OpenedNote('<p class="intro">Plant <b>tulips</b> now</p>');
  let state = EditorState.create({ doc: opened.doc });
  state = state.apply(state.tr.insertText('!', state.doc.content.size - 1));
  assert.equal(opened.htmlOf(state.doc), '<p class="intro">Plant <b>tulips</b> now!</p>');
});

test('ticking a checklist item changes that item only, the way its editor marks it', () => {
  const cases = [
    ['<ul data-checked="false"><li>a</li><li>b</li></ul>', '<ul data-checked="false"><li data-checked="true">a</li><li>b</li></ul>'],
    ['<ol><li data-list="unchecked">a</li><li data-list="unchecked">b</li></ol>', '<ol><li data-list="checked">a</li><li data-list="unchecked">b</li></ol>'],
    ['<ul><li class="task unchecked">a</li><li class="unchecked">b</li></ul>', '<ul><li class="task checked">a</li><li class="unchecked">b</li></ul>'],
    ['<ul><li data-checked="false">a</li><li data-checked="false">b</li></ul>', '<ul><li data-checked="true">a</li><li data-checked="false">b</li></ul>'],
  ];
  for (const [stored, expected] of cases) {
    const opened = new OpenedNote(stored);
    let state = EditorState.create({ doc: opened.doc });
    const node = state.doc.child(0);
    state = state.apply(state.tr.setNodeMarkup(0, null, { ...node.attrs, checked: true }));
    const saved = opened.htmlOf(state.doc);
    assert.equal(saved, expected, stored);
    assert.deepEqual(changedBlocks(stored, saved), [0]);
  }
});

test('schema round trip: every kind of block the editor makes is the block notesd reads', () => {
  const html = '<h1>One</h1>\n<h3>Three</h3>\n<p><strong>b</strong> <em>i</em> <s>s</s> <code>c</code> <a href="https://example.org">l</a><br>next</p>\n<ul><li>a<ul><li>nested</li></ul></li></ul>\n<ol><li>first</li><li>second</li></ol>\n<ul><li data-checked="true">done</li><li data-checked="false">todo</li></ul>\n<blockquote>quote</blockquote>\n<pre>code &lt; here\n</pre>\n<hr>';
  const opened = new OpenedNote(html);
  // Build each block again from its node, as a save of an edited note would.
  const rebuilt = [];
  opened.doc.forEach((node) => rebuilt.push(nodeToBlock(node)));
  assert.deepEqual(rebuilt.map(blockKey), split(html).map(blockKey));
  assert.equal(join(rebuilt), html);
});

test('typing a new paragraph between two adds exactly one block', () => {
  const stored = '<p>one</p>\n<p>two</p>';
  const opened = new OpenedNote(stored);
  let state = EditorState.create({ doc: opened.doc });
  const end = state.doc.child(0).nodeSize - 1;
  state = state.apply(state.tr.split(end));
  state = state.apply(state.tr.insertText('middle', end + 2));
  const saved = opened.htmlOf(state.doc);
  assert.equal(saved, '<p>one</p>\n<p>middle</p>\n<p>two</p>');
});

test('a change from another device merges into the open note without touching the typing', () => {
  const stored = '<p>mine</p>\n<p>theirs</p>\n<p>third</p>';
  const opened = new OpenedNote(stored);
  let state = EditorState.create({ doc: opened.doc });
  // The person types at the end of the first paragraph (not saved yet).
  state = state.apply(state.tr.insertText(' typed', 5));
  const cursor = state.selection.from;
  // Meanwhile the other device changed the second paragraph and added a fourth.
  const server = '<p>mine</p>\n<p>theirs, edited elsewhere</p>\n<p>third</p>\n<p>fourth</p>';
  const merged = mergeServer(state, opened.base, server);
  assert.ok(!merged.conflict);
  state = state.apply(merged.tr);
  assert.equal(state.selection.from, cursor, 'the cursor stays where the person was typing');
  assert.equal(merged.opened.htmlOf(state.doc), '<p>mine typed</p>\n<p>theirs, edited elsewhere</p>\n<p>third</p>\n<p>fourth</p>');
  // Saving now sends exactly one changed block against the daemon's version.
  assert.deepEqual(changedBlocks(server, merged.opened.htmlOf(state.doc)).length, 1);
});

test('after a save the answer is tied to the nodes that were sent', () => {
  const opened = new OpenedNote('<p>a</p>\n<p>b</p>');
  let state = EditorState.create({ doc: opened.doc });
  state = state.apply(state.tr.insertText('!', 2));
  const sent = opened.baseFor(state.doc);
  assert.equal(sent.html, '<p>a!</p>\n<p>b</p>');
  // More typing while the save is on its way.
  state = state.apply(state.tr.insertText('?', state.doc.content.size - 1));
  const merged = mergeServer(state, sent, sent.html);
  assert.equal(merged.tr, null, 'nothing changes on screen');
  assert.equal(merged.opened.htmlOf(state.doc), '<p>a!</p>\n<p>b?</p>');
  assert.deepEqual(changedBlocks(sent.html, merged.opened.htmlOf(state.doc)), [1]);
});

test('after a save the daemon kept as sent, the next save still writes untouched blocks byte for byte', () => {
  const html = '<p class="x"><b>kept</b> as it was</p>\n<p>first</p>\n<p>second</p>';
  const opened = new OpenedNote(html);
  let state = EditorState.create({ doc: opened.doc });
  state = state.apply(state.tr.insertText(' edit', opened.doc.child(0).nodeSize + 6));
  const sent = opened.baseFor(state.doc);
  const { tr, opened: after } = mergeServer(state, sent, sent.html);
  assert.equal(tr, null);
  assert.equal(after.htmlOf(state.doc), sent.html, 'nothing unsaved: the same HTML');
  const third = state.doc.content.size - state.doc.lastChild.nodeSize;
  state = state.apply(state.tr.insertText('the ', third + 1));
  const next = after.htmlOf(state.doc);
  assert.equal(next, '<p class="x"><b>kept</b> as it was</p>\n<p>first edit</p>\n<p>the second</p>');
  assert.deepEqual(changedBlocks(sent.html, next), [2]);
});

test('a change from elsewhere to the paragraph being typed in is a conflict, not an overwrite', () => {
  const opened = new OpenedNote('<p>same</p>\n<p>other</p>');
  let state = EditorState.create({ doc: opened.doc });
  state = state.apply(state.tr.insertText(' here', 5));
  const merged = mergeServer(state, opened.base, '<p>same, but there</p>\n<p>other</p>');
  assert.equal(merged.conflict, true);
});

test('block diff finds the changed run', () => {
  const b = (t) => split(t);
  assert.deepEqual(diffBlocks(b('<p>1</p><p>2</p><p>3</p>'), b('<p>1</p><p>x</p><p>3</p>')), [{ a: 1, b: 2, c: 1, d: 2 }]);
  assert.deepEqual(diffBlocks(b('<p>1</p><p>3</p>'), b('<p>1</p><p>2</p><p>3</p>')), [{ a: 1, b: 1, c: 1, d: 2 }]);
  assert.deepEqual(diffBlocks(b('<p>1</p><p>2</p><p>3</p><p>4</p>'), b('<p>0</p><p>2</p><p>3</p>')), [{ a: 0, b: 1, c: 0, d: 1 }, { a: 3, b: 4, c: 3, d: 3 }]);
  assert.deepEqual(diffBlocks(b('<p>1</p>'), b('<p>1</p>')), []);
});

test('a paste from another app is cleaned to the block model', () => {
  const html = '<meta charset="utf-8"><h2 style="color:red" class="x">Title</h2><p><span style="font-weight:700">Bold?</span> <b onclick="x()">yes</b></p><script>alert(1)</script><ul><li data-checked="true">one<ul><li>two</li></ul></li></ul><table><tr><td>a</td><td>b</td></tr></table>';
  const nodes = pastedNodes(html);
  const blocks = nodes.map(nodeToBlock);
  assert.equal(join(blocks), '<h2>Title</h2>\n<p>Bold? <b>yes</b></p>\n<ul><li data-checked="true">one<ul><li>two</li></ul></li></ul>\n<p>a b</p>');
  assert.deepEqual(pastedTextNodes('a\nb\n\nc').map((n) => n.type.name), ['paragraph', 'paragraph']);
});

test('the device of a conflict copy is the losing head of the merge', () => {
  const entries = [
    { revision: 'c', parents: ['a'], hlc: '300.0', deviceName: 'desktop' },
    { revision: 'b', parents: ['a'], hlc: '200.0', deviceName: 'laptop' },
    { revision: 'a', parents: [], hlc: '100.0', deviceName: 'laptop' },
  ];
  assert.equal(loserDevice(entries), 'laptop');
  const merged = [{ revision: 'm', parents: ['c', 'b'], hlc: '400.0', deviceName: 'phone' }, ...entries, { revision: 'd', parents: ['m'], hlc: '500.0', deviceName: 'phone' }];
  assert.equal(loserDevice(merged), 'laptop');
  assert.equal(loserDevice([{ revision: 'a', parents: [], hlc: '1.0', deviceName: 'x' }]), null);
});

test('compare rows pair equal blocks and mark the differing parts; taking one part changes only it', () => {
  const left = split('<p>same</p><p>mine</p><p>also same</p><p>only here</p>');
  const right = split('<p>same</p><p>theirs</p><p>also same</p>');
  const rows = compareRows(left, right);
  assert.deepEqual(rows.map((r) => r.differs), [false, true, false, true]);
  assert.deepEqual(rows[1].right.map((b) => b.content), ['theirs']);
  const taken = takeHunk(left, right, rows[1].hunk);
  assert.equal(join(taken), '<p>same</p>\n<p>theirs</p>\n<p>also same</p>\n<p>only here</p>');
});

test("a copy's title without the merge's \"(other version)\" is the title that version had", () => {
  assert.equal(originalTitle('Budget (other version)'), 'Budget');
  assert.equal(originalTitle('(other version)'), '');
  assert.equal(originalTitle('Renamed by hand'), 'Renamed by hand');
  assert.equal(originalTitle('Budget (other version) (other version)'), 'Budget (other version)');
  assert.equal(copyTitle('Budget'), 'Budget (other version)');
  assert.equal(copyTitle(''), '(other version)');
  assert.equal(originalTitle(copyTitle('Trip')), 'Trip');
});
