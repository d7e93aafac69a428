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
