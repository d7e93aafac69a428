// The search box: `notes.search` as you type (each word also a prefix), results in the list
// with the matched words highlighted. Escape clears it and goes back to the list.

import { debounce } from './dom.js';

export class Search {
  constructor(input, api, { onResults, onClear, onError }) {
    this.input = input;
    this.api = api;
    this.onResults = onResults;
    this.onClear = onClear;
    this.onError = onError;
    this.generation = 0;
    this.run = debounce(() => this.query(), 120);
    input.addEventListener('input', () => (input.value.trim() ? this.run() : this.clear()));
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') { event.preventDefault(); input.value = ''; this.clear(); }
      if (event.key === 'ArrowDown' || event.key === 'Enter') {
        event.preventDefault();
        this.run.cancel();
        if (input.value.trim()) this.query().then(() => document.getElementById('note-list').focus());
        else document.getElementById('note-list').focus();
      }
    });
  }

  get active() { return this.input.value.trim() !== ''; }

  clear() {
    this.run.cancel();
    this.generation += 1;
    this.onClear();
  }

  /** Runs the query; an answer to an older query than the latest is dropped. */
  async query() {
    const query = this.input.value.trim();
    if (!query) return this.clear();
    const generation = ++this.generation;
    try {
      const hits = await this.api.call('notes.search', { query, limit: 200 });
      if (generation === this.generation) this.onResults(query, hits);
    } catch (error) {
      if (generation === this.generation) this.onError(error);
    }
  }
}
