// Devices: this device and every household device with its sync status; "Add a device" (an
// invite code with its countdown and the `notesctl join` line to type on the new device);
// "Join a household" (takes a code); removing a device after a confirmation that names it.

import { h, replace, formatTime, errorMessage } from './dom.js';

const STATUS_WORDS = {
  connecting: 'connecting', syncing: 'syncing', idle: 'connected', offline: 'offline', blocked: 'refused',
};

export class DevicesView {
  constructor(pane, { api, onChanged }) {
    this.pane = pane;
    this.api = api;
    this.onChanged = onChanged;
    this.invite = null;
    this.countdown = null;
    this.confirming = null; // the device whose removal is being confirmed
    this.joinValues = { code: '', address: '' };
    this.message = h('p', { class: 'form-message', role: 'status', 'aria-live': 'polite' });
  }

  async show() {
    const [devices, status] = await Promise.all([this.api.call('devices.list'), this.api.call('status')]);
    this.devices = devices;
    this.status = status;
    this.render();
  }

  /** Events: redraw with fresh status (while this screen is open). */
  async refresh() {
    if (this.pane.hidden) return;
    try { await this.show(); } catch { /* the status line says what is wrong */ }
  }

  peerOf(device) {
    return (this.status.peers ?? []).find((p) => p.device === device.id) ?? null;
  }

  render() {
    const focused = document.activeElement?.dataset?.focusKey;
    const rotated = (this.status.household?.key?.epoch ?? 0) > 0;
    const rows = this.devices.map((device) => {
      const peer = this.peerOf(device);
      let state;
      if (device.isSelf) state = 'this device';
      else if (device.revoked) state = 'removed';
      else if (peer) state = STATUS_WORDS[peer.status] ?? peer.status;
      else state = 'offline';
      const details = [];
      if (peer?.lastSync) details.push(`last sync ${formatTime(peer.lastSync)}`);
      if (peer && peer.entriesBehind > 0) details.push(`${peer.entriesBehind} ${peer.entriesBehind === 1 ? 'entry' : 'entries'} behind`);
      if (peer?.lastError) details.push(peer.lastError);
      // A device's own row has its version from devices.list (status.version for daemons before it did).
      const version = device.version ?? (device.isSelf ? this.status.version : null);
      if (version) details.push(`notesd ${version}`);
      // Key epochs only matter once the household key has been rotated.
      if (rotated && !device.revoked && device.keyEpoch !== undefined && device.keyEpoch !== null) details.push(`key epoch ${device.keyEpoch}`);
      return h('li', { class: `device${device.revoked ? ' revoked' : ''}`, dataset: { device: device.id } },
        h('div', { class: 'device-main' },
          h('span', { class: 'device-name' }, device.name),
          h('span', { class: `device-state state-${state.replace(/\s+/g, '-')}` }, state),
          h('code', { class: 'device-id', title: device.id }, device.short)),
        h('div', { class: 'device-details' }, details.join(' · ') || (device.isSelf ? `added ${formatTime(device.added)}` : '')),
        device.isSelf || device.revoked ? null : h('button', {
          type: 'button', class: 'danger', dataset: { focusKey: `remove-${device.id}` }, onclick: () => this.confirmRemove(device),
        }, `Remove ${device.name}…`));
    });
    this.inviteBox = h('div', { class: 'invite-box', 'aria-live': 'polite' });
    this.renderInvite();
    // Redrawn on every sync event: what was typed, and a confirmation being answered, stay.
    const code = h('input', {
      type: 'text', id: 'join-code', autocomplete: 'off', spellcheck: 'false', placeholder: 'ABCD-EFGH-…', 'aria-describedby': 'join-help',
      value: this.joinValues.code, dataset: { focusKey: 'join-code' }, oninput: () => { this.joinValues.code = code.value; },
    });
    const address = h('input', {
      type: 'text', id: 'join-address', autocomplete: 'off', spellcheck: 'false', placeholder: 'optional: 192.168.1.20:7447',
      value: this.joinValues.address, dataset: { focusKey: 'join-address' }, oninput: () => { this.joinValues.address = address.value; },
    });
    const joinButton = h('button', { type: 'submit', class: 'primary' }, 'Join');
    const join = h('form', {
      class: 'join-form', onsubmit: (event) => { event.preventDefault(); this.join(code.value, address.value, joinButton); },
    },
    h('label', { for: 'join-code' }, 'Invite code from a device of the household'),
    code,
    h('label', { for: 'join-address' }, 'Its address (when it is not found on the network by itself)'),
    address,
    h('p', { id: 'join-help', class: 'muted' }, 'On a device of the household: Devices → Add a device, or `notesctl invite`. This device’s notes are kept and merged in.'),
    joinButton);
    const household = this.status.household;
    const key = household?.key;
    replace(this.pane,
      h('div', { class: 'devices' },
        h('h2', {}, 'Devices'),
        h('p', {}, household
          ? `Household ${household.short} · ${household.deviceCount} ${household.deviceCount === 1 ? 'device' : 'devices'}`
            + (rotated ? ` · key epoch ${key.epoch}` : '')
          : 'This device is not in a household any more: its notes are kept. Join one below.'),
        // Only when something is pending: a rotation waiting, or this device locked out.
        key && key.state !== 'settled' ? h('p', { class: 'key-state muted' }, `Household key: ${key.message}`) : null,
        this.message,
        h('ul', { class: 'device-list', 'aria-label': 'Household devices' }, rows),
        h('section', { class: 'card', 'aria-labelledby': 'add-heading' },
          h('h3', { id: 'add-heading' }, 'Add a device'),
          h('p', {}, 'Make a one-time code here, then enter it on the new device (in its app, or with the command shown).'),
          this.inviteBox),
        h('section', { class: 'card', 'aria-labelledby': 'join-heading' },
          h('h3', { id: 'join-heading' }, 'Join a household'),
          join)));
    if (this.confirming) this.showConfirm(this.confirming);
    if (focused) this.pane.querySelector(`[data-focus-key="${focused}"]`)?.focus();
  }

  renderInvite() {
    clearInterval(this.countdown);
    const make = h('button', { type: 'button', class: 'primary', dataset: { focusKey: 'invite' }, onclick: () => this.makeInvite() },
      this.invite ? 'Make another code' : 'Make an invite code');
    if (!this.invite) { replace(this.inviteBox, make); return; }
    const { code, expiresAt, addresses } = this.invite;
    const left = h('span', { class: 'countdown' });
    const tick = () => {
      const ms = expiresAt - Date.now();
      if (ms <= 0) {
        left.textContent = 'This code has expired: make another.';
        clearInterval(this.countdown);
        return;
      }
      const seconds = Math.ceil(ms / 1000);
      left.textContent = `Valid for ${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')} more, for one device.`;
    };
    tick();
    this.countdown = setInterval(tick, 1000);
    const line = `notesctl join ${code}${addresses?.length ? ` --address ${addresses[0]}` : ''}`;
    replace(this.inviteBox,
      h('p', { class: 'invite-code' }, h('code', { id: 'invite-code' }, code)),
      left,
      h('p', {}, 'On the new device, run:'),
      h('pre', { class: 'command' }, h('code', { id: 'join-line' }, line)),
      addresses?.length > 1 ? h('p', { class: 'muted' }, `Other addresses of this device: ${addresses.slice(1).join(', ')}`) : null,
      make);
  }

  async makeInvite() {
    try {
      this.invite = await this.api.call('invite');
      this.message.textContent = '';
      this.renderInvite();
      this.inviteBox.querySelector('#invite-code')?.focus?.();
    } catch (error) {
      this.message.textContent = errorMessage(error);
    }
  }

  async join(code, address, button) {
    code = code.trim();
    if (!code) { this.message.textContent = 'Enter the invite code first.'; return; }
    button.disabled = true;
    this.message.textContent = 'Joining… (this can take up to a minute)';
    try {
      const params = { code };
      if (address.trim()) params.address = address.trim();
      const result = await this.api.call('join', params);
      this.joinValues = { code: '', address: '' };
      this.message.textContent = `Joined household ${result.household.short}: ${result.devices.length} devices. Notes sync now.`;
      await this.show();
      this.onChanged();
    } catch (error) {
      this.message.textContent = errorMessage(error);
    } finally {
      button.disabled = false;
    }
  }

  confirmRemove(device) {
    this.confirming = device;
    this.showConfirm(device);
    this.pane.querySelector('[role=alertdialog] button:last-child')?.focus();
  }

  cancelRemove() {
    const device = this.confirming;
    this.confirming = null;
    this.render();
    if (device) this.pane.querySelector(`[data-focus-key="remove-${device.id}"]`)?.focus();
  }

  showConfirm(device) {
    if (!this.pane.querySelector(`[data-device="${device.id}"]`)) { this.confirming = null; return; }
    const dialog = h('div', { class: 'confirm', role: 'alertdialog', 'aria-modal': 'true', 'aria-labelledby': 'confirm-text' },
      h('p', { id: 'confirm-text' }, `Remove “${device.name}” (${device.short}) from the household? It keeps the notes it has, but stops syncing with every device here, now and for good (until it joins again with a new code).`),
      h('div', { class: 'confirm-actions' },
        h('button', { type: 'button', class: 'danger', dataset: { focusKey: 'confirm-remove' }, onclick: () => this.remove(device) }, `Remove ${device.name}`),
        h('button', { type: 'button', dataset: { focusKey: 'confirm-cancel' }, onclick: () => this.cancelRemove() }, 'Cancel')));
    dialog.addEventListener('keydown', (event) => { if (event.key === 'Escape') this.cancelRemove(); });
    this.pane.querySelector(`[data-device="${device.id}"]`).append(dialog);
  }

  async remove(device) {
    try {
      await this.api.call('devices.remove', { device: device.id });
      this.confirming = null;
      this.message.textContent = `${device.name} was removed from the household.`;
      await this.show();
      this.onChanged();
    } catch (error) {
      this.message.textContent = errorMessage(error);
    }
  }
}
