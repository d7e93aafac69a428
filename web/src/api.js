// The control protocol's JSON-RPC over HTTP (docs/web.md): `POST /api/rpc` with the session
// as `Authorization: Bearer`. The session comes from `POST /api/login` with the one-time token
// `notesctl ui` puts in the URL fragment (`#login=TOKEN`), and is kept in localStorage, which
// is scoped to this origin and port — never a cookie, which another user's notesd on another
// 127.0.0.1 port would receive.

const SESSION_KEY = 'notesd.session';

/** A JSON-RPC error from the daemon: `code` is the control protocol's (docs/control-protocol.md). */
export class RPCError extends Error {
  constructor(error) {
    super(error.message);
    this.name = 'RPCError';
    this.code = error.code;
    this.data = error.data ?? null;
  }
}

/** notesd did not answer at all (not running, restarting): the app retries by itself. */
export class OfflineError extends Error {
  constructor(message) { super(message); this.name = 'OfflineError'; }
}

/** The session was refused (expired, logged out everywhere): sign in again with `notesctl ui`. */
export class SignedOutError extends Error {
  constructor(message) { super(message); this.name = 'SignedOutError'; }
}

export class Api {
  constructor(storage = globalThis.localStorage, fetcher = (...args) => globalThis.fetch(...args)) {
    this.storage = storage;
    this.fetch = fetcher;
    this.nextId = 1;
    this.listeners = { online: new Set(), offline: new Set(), signedOut: new Set() };
    this.online = null;
  }

  get session() { return this.storage.getItem(SESSION_KEY); }

  on(event, listener) { this.listeners[event].add(listener); }

  emit(event, value) { for (const listener of this.listeners[event]) listener(value); }

  setOnline(online) {
    if (this.online === online) return;
    this.online = online;
    this.emit(online ? 'online' : 'offline');
  }

  /** Exchanges the `#login=` token for a session; throws SignedOutError if it is refused. */
  async login(token) {
    let response;
    try {
      response = await this.fetch('/api/login', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token }),
      });
    } catch {
      this.setOnline(false);
      throw new OfflineError('notesd is not running');
    }
    this.setOnline(true);
    if (!response.ok) throw new SignedOutError('That sign-in link was already used or has expired: run `notesctl ui` again.');
    const { session } = await response.json();
    this.storage.setItem(SESSION_KEY, session);
    return session;
  }

  signOut() {
    this.storage.removeItem(SESSION_KEY);
  }

  /** Calls a control-protocol method; resolves to its result, rejects with RPCError/OfflineError/SignedOutError. */
  async call(method, params = {}, { keepalive = false } = {}) {
    const session = this.session;
    if (!session) throw new SignedOutError('Not signed in: run `notesctl ui` to open the app signed in.');
    const id = this.nextId++;
    let response;
    try {
      response = await this.fetch('/api/rpc', {
        method: 'POST',
        keepalive,
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${session}` },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      });
    } catch {
      this.setOnline(false);
      throw new OfflineError('notesd is not running');
    }
    if (response.status === 401) {
      this.setOnline(true);
      this.signOut();
      this.emit('signedOut');
      throw new SignedOutError('This browser was signed out: run `notesctl ui` to sign in again.');
    }
    if (response.status >= 500 || response.status === 0) {
      this.setOnline(false);
      throw new OfflineError(`notesd answered ${response.status}`);
    }
    this.setOnline(true);
    const answer = await response.json();
    if (answer.error) throw new RPCError(answer.error);
    return answer.result;
  }
}

/** The token in a `#login=TOKEN` fragment, or null. */
export function loginToken(hash) {
  const match = /^#login=([A-Za-z0-9_-]+)$/.exec(hash);
  return match ? match[1] : null;
}
