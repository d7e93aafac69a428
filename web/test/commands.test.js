// The editing behaviour written for the flat block model: undo/redo around remote merges,
// Enter in lists, Tab nesting, and the block a checklist input rule makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EditorState, TextSelection } from 'prosemirror-state';
import { history, undo, redo, splitBlock, indent, backspace, makeChecklist } from '../src/commands.js';
import { OpenedNote, mergeServer } from '../src/blockdoc.js';

function stateOf(html) {
  const opened = new OpenedNote(html);
  return { opened, state: EditorState.create({ doc: opened.doc, plugins: [history] }) };
}

const run = (state, command) => {
  let next = state;
  assert.ok(command(state, (tr) => { next = state.apply(tr); }), 'the command applies');
  return next;
};

test('undo takes back the person’s typing and leaves a merged remote change in place', () => {
  const { opened, state: initial } = stateOf('<p>mine</p>\n<p>theirs</p>');
  let state = initial.apply(initial.tr.insertText(' typed', 5));
  const merged = mergeServer(state, opened.base, '<p>mine</p>\n<p>theirs, changed</p>');
  state = state.apply(merged.tr);
  state = run(state, undo);
  assert.equal(merged.opened.htmlOf(state.doc), '<p>mine</p>\n<p>theirs, changed</p>');
  state = run(state, redo);
  assert.equal(merged.opened.htmlOf(state.doc), '<p>mine typed</p>\n<p>theirs, changed</p>');
});

test('Enter continues a list item (unticked), Enter on an empty item leaves the list; Tab nests', () => {
  const { opened, state: initial } = stateOf('<ul><li data-checked="true">one</li></ul>');
  let state = initial.apply(initial.tr.setSelection(TextSelection.create(initial.doc, 4)));
  state = run(state, splitBlock);
  state = state.apply(state.tr.insertText('two'));
  state = run(state, indent(1));
  assert.equal(opened.htmlOf(state.doc), '<ul><li data-checked="true">one<ul><li data-checked="false">two</li></ul></li></ul>');
  state = run(state, indent(-1));
  state = run(state, splitBlock);
  state = run(state, splitBlock);
  assert.equal(state.doc.lastChild.type.name, 'paragraph');
  assert.equal(opened.htmlOf(state.doc), '<ul><li data-checked="true">one</li><li data-checked="false">two</li></ul>\n<p></p>');
});

test('Backspace at the start of an item leaves the list; a checklist command makes notesd’s checklist', () => {
  const { opened, state: initial } = stateOf('<p>Buy milk</p>');
  let state = initial.apply(initial.tr.setSelection(TextSelection.create(initial.doc, 1)));
  state = run(state, makeChecklist);
  assert.equal(opened.htmlOf(state.doc), '<ul><li data-checked="false">Buy milk</li></ul>');
  state = run(state, backspace);
  assert.equal(opened.htmlOf(state.doc), '<p>Buy milk</p>');
});

test('numbers of numbered items follow typing, and are counted again when the list changes', async () => {
  const { numbering } = await import('../src/commands.js');
  const opened = new OpenedNote('<ol><li>one</li><li>two</li></ol>\n<p>after</p>');
  let state = EditorState.create({ doc: opened.doc, plugins: [numbering] });
  const numbers = (s) => numbering.getState(s).find().map((d) => [s.doc.resolve(d.from).index(0), d.type.attrs['data-number']]);
  assert.deepEqual(numbers(state), [[0, '1.'], [1, '2.']]);
  // Typing in an item: the same numbers, moved along with the text.
  state = state.apply(state.tr.insertText('first, ', 1));
  assert.deepEqual(numbers(state), [[0, '1.'], [1, '2.']]);
  // A new item between them (Enter at the end of the first): counted again.
  state = state.apply(state.tr.setSelection(TextSelection.create(state.doc, state.doc.child(0).nodeSize - 1)));
  state = run(state, splitBlock);
  assert.deepEqual(numbers(state), [[0, '1.'], [1, '2.'], [2, '3.']]);
  // The paragraph after made a numbered item of the same list: it continues the count.
  const last = state.doc.content.size - state.doc.lastChild.nodeSize;
  state = state.apply(state.tr.setNodeMarkup(last, null, null).setNodeMarkup(last, state.schema.nodes.list_item, { ...state.doc.child(0).attrs }));
  assert.deepEqual(numbers(state), [[0, '1.'], [1, '2.'], [2, '3.'], [3, '4.']]);
});
