// The status line: what sync is doing, in words (caught up, syncing n entries, offline, Avahi
// unavailable and what to do), and "notesd is not running" while the daemon is away — the app
// keeps trying and says when it is back.

import { h, replace, formatTime } from './dom.js';

/** What the status line says for a `status` result and the event stream's state. */
export function describeStatus(status, { online = true } = {}) {
  if (!online) {
    return { tone: 'bad', text: 'notesd is not running — reconnecting by itself. Start it with `systemctl --user start notesd` (or `notesd`); nothing typed here is lost.' };
  }
  if (!status) return { tone: 'muted', text: 'Connecting to notesd…' };
  const peers = status.peers ?? [];
  const connected = peers.filter((p) => p.connected);
  const behind = peers.reduce((sum, p) => sum + (p.connected ? p.entriesBehind : 0), 0);
  const parts = [];
  let tone = 'good';
  if (!status.household) {
    tone = 'bad';
    parts.push('This device was removed from its household: its notes are kept here; join again from Devices.');
  } else if (peers.length === 0) {
    tone = 'muted';
    parts.push('Only this device: add another from Devices to sync.');
  } else if (connected.length === 0) {
    tone = 'warn';
    const last = peers.map((p) => p.lastSync).filter(Boolean).sort((a, b) => b - a)[0];
    parts.push(`Offline: no other device connected${last ? ` (last synced ${formatTime(last)})` : ''}. Changes are kept and sent when one is back.`);
  } else if (behind > 0) {
    tone = 'busy';
    const names = connected.filter((p) => p.entriesBehind > 0).map((p) => p.name ?? p.address).join(', ');
    parts.push(`Syncing ${behind} ${behind === 1 ? 'entry' : 'entries'} with ${names}…`);
  } else {
    const names = connected.map((p) => p.name ?? p.address);
    parts.push(`Caught up with ${names.length === 1 ? names[0] : `${names.length} devices`}.`);
  }
  if (status.notesToIndex) {
    if (tone === 'good' || tone === 'muted') tone = 'busy';
    const n = status.notesToIndex;
    parts.push(`Indexing ${n} ${n === 1 ? 'note' : 'notes'} for search: search misses ${n === 1 ? 'it' : 'them'} until then.`);
  }
  const blocked = peers.filter((p) => p.status === 'blocked');
  if (blocked.length) parts.push(`${blocked.map((p) => p.name ?? p.address).join(', ')} refused: ${blocked[0].lastError ?? 'not in this household'}.`);
  if (status.discovery?.state === 'unavailable') {
    if (tone === 'good') tone = 'warn';
    parts.push(`Finding devices on the network is off (${status.discovery.reason ?? 'Avahi unavailable'}): start avahi-daemon, or connect by address with \`notesctl connect HOST:PORT\`.`);
  }
  return { tone, text: parts.join(' ') };
}

export class StatusLine {
  constructor(element, api) {
    this.element = element;
    this.api = api;
    this.status = null;
    this.online = true;
    this.refreshing = null;
    this.again = false;
  }

  /** Re-reads `status` (coalescing bursts of events into one request at a time). */
  async refresh() {
    if (this.refreshing) { this.again = true; return this.refreshing; }
    this.refreshing = (async () => {
      do {
        this.again = false;
        try {
          this.status = await this.api.call('status');
          this.online = true;
        } catch (error) {
          if (error.name === 'OfflineError') this.online = false;
        }
        this.render();
      } while (this.again);
      // While entries are still on their way, look again shortly: the last progress event
      // may come before the daemon's counters settle.
      // A few times only: an idle app must not poll. Search indexing sends no event when it
      // ends, so while the daemon reports notes to index it is asked again each second.
      clearTimeout(this.busyTimer);
      this.busyPolls = this.element.dataset.tone === 'busy' ? (this.busyPolls ?? 0) + 1 : 0;
      const indexing = Boolean(this.online && this.status?.notesToIndex);
      if (indexing || (this.busyPolls > 0 && this.busyPolls <= 5)) this.busyTimer = setTimeout(() => this.refresh(), 1000);
    })();
    try { await this.refreshing; } finally { this.refreshing = null; }
  }

  setOnline(online) {
    this.online = online;
    this.render();
  }

  render() {
    const { tone, text } = describeStatus(this.status, { online: this.online });
    this.element.dataset.tone = tone;
    const pieces = text.split(/`([^`]+)`/).map((piece, i) => (i % 2 ? h('code', {}, piece) : piece));
    replace(this.element, h('span', { class: 'dot', 'aria-hidden': 'true' }), h('span', { class: 'status-text' }, pieces));
  }
}
