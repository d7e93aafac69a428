// What the status line says: sync state in words, and search indexing after a catch-up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStatus } from '../src/status.js';

const laptop = { name: 'laptop', connected: true, entriesBehind: 0, status: 'idle' };
const base = { household: { id: 'h' }, peers: [laptop], discovery: { state: 'running' } };

test('caught up says so, with the device', () => {
  assert.deepEqual(describeStatus(base), { tone: 'good', text: 'Caught up with laptop.' });
});

test('notes waiting for the search index are counted and the line is busy', () => {
  const { tone, text } = describeStatus({ ...base, notesToIndex: 1200 });
  assert.equal(tone, 'busy');
  assert.equal(text, 'Caught up with laptop. Indexing 1200 notes for search: search misses them until then.');
  assert.match(describeStatus({ ...base, notesToIndex: 1 }).text, /Indexing 1 note for search: search misses it/);
});

test('a daemon that reports nothing to index (or an older one) says nothing of it', () => {
  assert.doesNotMatch(describeStatus({ ...base, notesToIndex: undefined }).text, /Indexing/);
});
