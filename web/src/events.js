// The daemon's live events (`GET /api/events`, Server-Sent Events; docs/web.md), read with
// fetch() streaming because EventSource cannot send the Authorization header. The last event
// id is sent back as `Last-Event-ID` on reconnect, so nothing is missed across a restart of
// the stream; when the daemon cannot resume (`resync`), the app re-reads everything.

/** Parses an SSE byte stream, chunk by chunk, into {id, event, data} messages and retry hints. */
export class SSEParser {
  constructor(onMessage, onRetry = () => {}) {
    this.onMessage = onMessage;
    this.onRetry = onRetry;
    this.buffer = '';
    this.reset();
  }

  reset() {
    this.event = '';
    this.data = [];
    this.id = null;
  }

  push(text) {
    this.buffer += text;
    let newline;
    while ((newline = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, newline);
      const length = this.buffer.startsWith('\r\n', newline) ? 2 : 1;
      // A lone \r at the end of a chunk may be half of \r\n: wait for more.
      if (length === 1 && this.buffer[newline] === '\r' && newline === this.buffer.length - 1) break;
      this.buffer = this.buffer.slice(newline + length);
      this.line(line);
    }
  }

  line(line) {
    if (line === '') {
      if (this.data.length > 0 || this.event) {
        this.onMessage({ id: this.id, event: this.event || 'message', data: this.data.join('\n') });
      }
      this.reset();
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id') this.id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.onRetry(Number(value));
  }
}

/**
 * A stream of events that reconnects by itself: `onEvent(type, data)` for each event,
 * `onState('open'|'closed')` as the connection comes and goes, `onResync()` when the app
 * must re-read its state (first connection, and whenever the daemon could not resume).
 */
export class EventStream {
  constructor(api, { onEvent, onState, onResync }) {
    this.api = api;
    this.onEvent = onEvent;
    this.onState = onState;
    this.onResync = onResync;
    this.lastId = null;
    this.retryMs = 2000;
    this.failures = 0;
    this.stopped = false;
    this.controller = null;
    this.wake = null;
  }

  start() {
    this.stopped = false;
    this.generation = (this.generation ?? 0) + 1;
    this.loop(this.generation);
  }

  stop() {
    this.stopped = true;
    this.controller?.abort();
    this.wake?.();
  }

  /** Reconnect now instead of waiting out the back-off (e.g. when the window regains focus). */
  retryNow() {
    this.wake?.();
  }

  async loop(generation) {
    const current = () => !this.stopped && generation === this.generation;
    while (current()) {
      try {
        await this.once();
      } catch {
        // fall through: reconnect below
      }
      if (!current()) return;
      this.onState('closed');
      this.failures += 1;
      const delay = Math.min(this.retryMs * Math.min(this.failures, 5), 10000);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, this.failures === 1 ? Math.min(500, delay) : delay);
        this.wake = () => { clearTimeout(timer); resolve(); };
      });
      this.wake = null;
    }
  }

  async once() {
    const session = this.api.session;
    if (!session) throw new Error('not signed in');
    this.controller = new AbortController();
    const headers = { Authorization: `Bearer ${session}`, Accept: 'text/event-stream' };
    if (this.lastId) headers['Last-Event-ID'] = this.lastId;
    let response;
    try {
      response = await fetch('/api/events', { headers, signal: this.controller.signal, cache: 'no-store' });
    } catch (error) {
      this.api.setOnline(false);
      throw error;
    }
    if (response.status === 401) {
      this.api.signOut();
      this.api.emit('signedOut');
      this.stopped = true;
      return;
    }
    if (!response.ok || !response.body) {
      this.api.setOnline(response.status < 500);
      throw new Error(`events answered ${response.status}`);
    }
    this.api.setOnline(true);
    const resumed = this.lastId !== null;
    const parser = new SSEParser((message) => this.message(message, resumed), (ms) => { this.retryMs = ms; });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.push(value);
    }
  }

  message(message, resumed) {
    if (message.id) this.lastId = message.id;
    let data = null;
    try {
      data = message.data ? JSON.parse(message.data) : null;
    } catch {
      return;
    }
    if (message.event === 'ready') {
      this.failures = 0;
      this.onState('open');
      // A fresh stream (no id to resume from) may have missed anything: re-read.
      if (!resumed) this.onResync();
      return;
    }
    if (message.event === 'resync') {
      this.failures = 0;
      this.onState('open');
      this.onResync();
      return;
    }
    this.onEvent(message.event, data);
  }
}
