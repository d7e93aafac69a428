// The app's splitter agrees with notesd's (the cases and expectations of
// Tests/MergeTests/HTMLBlocksTests.swift, which define the block model).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { split, join, blockKey, checklistState, isOrderedItem } from '../src/htmlblocks.js';

const bullet = { ordered: false, attributes: [] };
const numbered = { ordered: true, attributes: [] };

/** A block without the source text of its tags: what notesd compares. */
function plain(block) {
  const out = { kind: block.kind, attributes: block.attributes, content: block.content };
  if (block.level) out.level = block.level;
  if (block.containers) out.containers = block.containers.map((c) => ({ ordered: c.ordered, attributes: c.attributes }));
  return out;
}
const blocks = (html) => split(html).map(plain);
/** join as notesd writes it: attributes rewritten, not taken from the source. */
const joinFresh = (bs) => join(bs.map((b) => ({ ...b, startTag: null, containers: b.containers?.map((c) => ({ ...c, startTag: null })) })));
const p = (content, attributes = []) => ({ kind: 'paragraph', attributes, content });
const item = (containers, content, attributes = []) => ({ kind: 'listItem', attributes, content, containers });

function invariants(html) {
  const first = split(html);
  assert.deepEqual(split(join(first)).map(blockKey), first.map(blockKey), `split(join(split(h))) for ${html}`);
  assert.deepEqual(split(joinFresh(first)).map(blockKey), first.map(blockKey), `fresh join for ${html}`);
}

test('paragraphs, headings, quotes and rules', () => {
  const html = '<h1>Trip</h1><p class="lead">Pack <b>light</b>, see <a href="https://example.org/?a=1&amp;b=2">the list</a>.</p><blockquote><p>Travel far.</p><p>— someone</p></blockquote><hr><h3>Day 1</h3>';
  assert.deepEqual(blocks(html), [
    { kind: 'heading', level: 1, attributes: [], content: 'Trip' },
    p('Pack <b>light</b>, see <a href="https://example.org/?a=1&amp;b=2">the list</a>.', [{ name: 'class', value: 'lead' }]),
    { kind: 'quote', attributes: [], content: '<p>Travel far.</p><p>— someone</p>' },
    { kind: 'rule', attributes: [], content: '' },
    { kind: 'heading', level: 3, attributes: [], content: 'Day 1' },
  ]);
  assert.equal(joinFresh(split(html)), '<h1>Trip</h1>\n<p class="lead">Pack <b>light</b>, see <a href="https://example.org/?a=1&amp;b=2">the list</a>.</p>\n<blockquote><p>Travel far.</p><p>— someone</p></blockquote>\n<hr>\n<h3>Day 1</h3>');
  invariants(html);
});

test('nested lists split into items and join back exactly', () => {
  const html = '<ul><li>fruit<ul><li>apples</li><li>pears<ol><li>conference</li><li>williams</li></ol></li></ul></li><li>bread</li></ul>';
  assert.deepEqual(blocks(html), [
    item([bullet], 'fruit'), item([bullet, bullet], 'apples'), item([bullet, bullet], 'pears'),
    item([bullet, bullet, numbered], 'conference'), item([bullet, bullet, numbered], 'williams'), item([bullet], 'bread'),
  ]);
  assert.equal(join(split(html)), html);
  invariants(html);
});

test('Quill checklists keep their list attributes', () => {
  const html = '<ul data-checked="true"><li>Buy milk</li></ul><ul data-checked="false"><li>Call Ann</li><li>Post letter</li></ul>';
  assert.deepEqual(split(html).map(checklistState), [true, false, false]);
  assert.equal(join(split(html)), html.replace('</ul><ul', '</ul>\n<ul'));
  invariants(html);
});

test('checklist states from every editor', () => {
  const cases = [
    ['<ul data-type="taskList"><li data-type="taskItem" data-checked="true"><label><input type="checkbox" checked="checked"><span></span></label><div><p>Done</p></div></li><li data-type="taskItem" data-checked="false"><label><input type="checkbox"><span></span></label><div><p>Todo</p></div></li></ul>', [true, false]],
    ['<ol><li data-list="checked">a</li><li data-list="unchecked">b</li><li data-list="bullet">c</li></ol>', [true, false, null]],
    ['<ul><li role="checkbox" aria-checked="true">a</li><li role="checkbox" aria-checked="false">b</li></ul>', [true, false]],
    ['<ul><li class="task-list-item"><input type="checkbox" class="task-list-item-checkbox" checked disabled> a</li><li><INPUT TYPE=checkbox> b</li><li>plain <input type="checkbox" checked></li></ul>', [true, false, null]],
    ['<ul class="checklist"><li class="checked">a</li><li class="unchecked">b</li></ul>', [true, false]],
  ];
  for (const [html, expected] of cases) {
    assert.deepEqual(split(html).map(checklistState), expected, html);
    assert.equal(joinFresh(split(html)), html, html);
    invariants(html);
  }
  assert.deepEqual(split('<ol><li data-list="bullet">a</li><li data-list="ordered">b</li><li>c</li></ol>').map(isOrderedItem), [false, true, true]);
});

test('a TipTap nested task list stays inside its item', () => {
  const html = '<ul data-type="taskList"><li data-checked="false"><label><input type="checkbox"></label><div><p>parent</p><ul data-type="taskList"><li data-checked="true"><label><input type="checkbox" checked></label><div><p>child</p></div></li></ul></div></li></ul>';
  const bs = split(html);
  assert.equal(bs.length, 1);
  assert.equal(checklistState(bs[0]), false);
  assert.equal(join(bs), html);
});

test('code blocks keep every character', () => {
  assert.deepEqual(blocks('<pre>if a < b && c<5 {\n  print("<")\n}\n</pre>'), [{ kind: 'code', attributes: [], content: 'if a &lt; b && c&lt;5 {\n  print("&lt;")\n}\n' }]);
  invariants('<pre><code class="language-swift">if a &lt; b {&#10;}</code></pre>');
});

test('tables and unknown elements are opaque and verbatim', () => {
  const table = '<table class="grid"><tbody><tr><td>a</td><td>b &amp; c</td></tr></tbody></table>';
  const bs = split(`<p>before</p>${table}<figure><img src="x.png"><figcaption>cap</figcaption></figure><p>after</p>`);
  assert.deepEqual(bs.map((b) => b.kind), ['paragraph', 'opaque', 'opaque', 'paragraph']);
  assert.equal(bs[1].content, table);
});

test('div paragraphs and wrappers', () => {
  const html = '<div><h1>Title</h1></div><div>first line</div><div><br></div><div class="note"><p>inside</p><ul><li>x</li></ul></div>';
  assert.deepEqual(blocks(html), [
    { kind: 'opaque', attributes: [], content: '<div>' },
    { kind: 'heading', level: 1, attributes: [], content: 'Title' },
    { kind: 'opaque', attributes: [], content: '</div>' },
    { kind: 'division', attributes: [], content: 'first line' },
    { kind: 'division', attributes: [], content: '<br>' },
    { kind: 'opaque', attributes: [], content: '<div class="note">' },
    p('inside'),
    item([bullet], 'x'),
    { kind: 'opaque', attributes: [], content: '</div>' },
  ]);
  invariants(html);
});

test('tokenizer edge cases', () => {
  const attributes = split('<P CLASS=lead data-x=\'a "b"\' hidden title="x &amp; y">t</P>');
  assert.deepEqual(attributes[0].attributes, [
    { name: 'class', value: 'lead' }, { name: 'data-x', value: 'a "b"' }, { name: 'hidden', value: null }, { name: 'title', value: 'x & y' },
  ]);
  assert.equal(joinFresh(attributes), '<p class="lead" data-x="a &quot;b&quot;" hidden title="x &amp; y">t</p>');
  assert.deepEqual(blocks('<p>a<!-- <p>not a block</p> -->b</p>\n\n  <!-- lone -->\n<p>c</p>'), [
    p('a<!-- <p>not a block</p> -->b'), { kind: 'opaque', attributes: [], content: '<!-- lone -->' }, p('c'),
  ]);
  assert.deepEqual(blocks('<p>one<p>two<ul><li>x<li>y</ul>three'), [
    p('one'), p('two'), item([bullet], 'x'), item([bullet], 'y'), { kind: 'opaque', attributes: [], content: 'three' },
  ]);
  assert.deepEqual(split(''), []);
  assert.deepEqual(split(' \n\t '), []);
  assert.equal(join([]), '');
  assert.deepEqual(blocks('<p>1 < 2 <3 <-> <</p>'), [p('1 &lt; 2 &lt;3 &lt;-> &lt;')]);
  assert.equal(split("<p>x</p><script>if (a<b) document.write('<p>')</script><style>p>b{}</style>").length, 2);
});

test('malformed HTML becomes opaque and loses nothing', () => {
  const cases = [
    'stray text <b>bold</b> then <p>para</p> tail', '<div>never closed <p>para</p>',
    '<h2>heading <p>with a block inside</p></h2>', '<blockquote>open quote', '<pre>unclosed code <b>x</b>',
    '<p>unclosed tag <a href="x', '<p>unterminated <!-- comment', '<ul><li>a</li><!-- between --><li>b</li></ul>',
    '<ul><li>a</li><p>not an item</p><li>b</li></ul>', '<li>item with no list</li><li>another', '</div></p>text</li>',
    '<ul><li>a<ul><li>b</li></ul>after nested</li></ul>', '<ul><ul><li>deep first</li></ul><li>shallow</li></ul>',
    '<div><blockquote>crossed</div></blockquote>', '<p =x>odd attribute</p>',
    '<html><head><title>T</title></head><body><p>x</p></body></html>', '<script>never closed <p>x</p>',
  ];
  for (const html of cases) {
    assert.ok(split(html).length > 0, html);
    invariants(html);
  }
  assert.deepEqual(blocks('<div>never closed <p>para</p>'), [
    { kind: 'opaque', attributes: [], content: '<div>' }, { kind: 'opaque', attributes: [], content: 'never closed' }, p('para'),
  ]);
  assert.deepEqual(blocks('<ul><li>a<ul><li>b</li></ul>after nested</li></ul>'), [item([bullet], 'a'), item([bullet, bullet], 'b'), item([bullet], 'after nested')]);
  assert.deepEqual(blocks('<p>unterminated <!-- comment'), [p('unterminated &lt;!-- comment')]);
});

test('join rebuilds lists after edits changed their shape', () => {
  const bs = [item([bullet], 'a'), item([bullet, bullet, numbered], 'deep'), p('between'), item([numbered], 'n'), item([bullet], 'b')];
  const html = join(bs);
  assert.equal(html, '<ul><li>a<ul><ol><li>deep</li></ol></ul></li></ul>\n<p>between</p>\n<ol><li>n</li></ol>\n<ul><li>b</li></ul>');
  assert.deepEqual(blocks(html), bs);
});

test('deep nesting neither crashes nor loses text', () => {
  for (const [open, close] of [['<div><p>x</p>', '</div>'], ['<ul><li>x', '</li></ul>'], ['<ol>', '</ol>'], ['<blockquote><p>x</p>', '</blockquote>']]) {
    const html = open.repeat(5000) + '<p>end</p>' + close.repeat(5000);
    const bs = split(html);
    assert.ok(bs.length > 0);
    assert.deepEqual(split(join(bs)).map(blockKey), bs.map(blockKey));
  }
});
