// The library's reads: the first page before the whole library, and patches after events.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Library, FIRST_PAGE } from '../src/library.js';

const summary = (i, extra = {}) => ({ id: `id-${String(i).padStart(5, '0')}`, title: `Note ${i}`, folder: null, pinned: false, tags: [], trashed: false, conflictOf: null, modified: i, ...extra });

/** An API answering notes.list (newest first, `limit` honoured) and folders.list from `notes`. */
function fakeApi(notes, folders = []) {
  const calls = [];
  return {
    calls,
    async call(method, params) {
      calls.push([method, params]);
      if (method === 'folders.list') return folders;
      if (method !== 'notes.list') throw new Error(`unexpected ${method}`);
      const chosen = notes.filter((n) => Boolean(params.trashed) === n.trashed).sort((a, b) => b.modified - a.modified);
      return params.limit ? chosen.slice(0, params.limit) : chosen;
    },
  };
}

test('the first read shows one page, without counts, then the whole library', async () => {
  const notes = Array.from({ length: 1000 }, (_, i) => summary(i));
  const api = fakeApi(notes, [{ id: 'f', name: 'Work', parent: null }]);
  const library = new Library(api);
  const seen = [];
  library.onChange(() => seen.push({ count: library.notes.length, complete: library.complete, folders: library.folders.length }));
  await library.reload();
  assert.deepEqual(seen, [
    { count: FIRST_PAGE, complete: false, folders: 1 },
    { count: 1000, complete: true, folders: 1 },
  ]);
  assert.deepEqual(api.calls[0], ['notes.list', { limit: FIRST_PAGE }]);
  assert.equal(library.notes[0].id, 'id-00999', 'newest first');
  // Later reads are whole at once.
  seen.length = 0;
  await library.reload();
  assert.deepEqual(seen, [{ count: 1000, complete: true, folders: 1 }]);
});

test('patching puts several notes in place at once: edited, trashed, new, with the folders', async () => {
  const library = new Library(fakeApi([summary(1), summary(2), summary(3)]));
  await library.reload();
  let changes = 0;
  library.onChange(() => { changes += 1; });
  library.patch([summary(1, { modified: 10, title: 'Edited' }), summary(2, { trashed: true }), summary(4, { modified: 5 })], [{ id: 'g', name: 'New', parent: null }]);
  assert.equal(changes, 1, 'one redraw for the batch');
  assert.deepEqual(library.notes.map((n) => n.id), ['id-00001', 'id-00004', 'id-00003']);
  assert.deepEqual(library.trashed.map((n) => n.id), ['id-00002']);
  assert.equal(library.get('id-00001').title, 'Edited');
  assert.deepEqual(library.folders.map((f) => f.id), ['g']);
  // One summary alone, as the editor's own save gives it, still works.
  library.patch(summary(3, { modified: 20 }));
  assert.equal(library.notes[0].id, 'id-00003');
});
