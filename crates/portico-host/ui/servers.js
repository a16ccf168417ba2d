// Servers: each upstream's status, refreshed every second, with restart and enable/disable.

import { get, post, seg } from './api.js';
import { h, fill, state } from './dom.js';

const POLL_MS = 1000;

export function mount(main, ctx) {
  const list = h('div', { class: 'cards', 'aria-live': 'polite' });
  const note = h('p', { class: 'note', role: 'status' });
  fill(main, h('h1', {}, 'Servers'), note, list);
  list.append(state('loading', 'Loading servers…'));
  let timer = null;
  let stopped = false;
  let busy = new Set();
  let last = '';

  const act = async (name, what) => {
    busy.add(name);
    note.textContent = '';
    try {
      await post(`/servers/${seg(name)}/${what}`);
      note.textContent = `${name}: ${what === 'restart' ? 'restarting' : what + 'd'}.`;
    } catch (e) {
      note.textContent = `${name}: ${e.message}`;
    } finally {
      busy.delete(name);
      refresh();
    }
  };

  const card = (s) => h('article', { class: `card server state-${s.state}`, 'aria-label': `Server ${s.name}` },
    h('header', {},
      h('h2', {}, s.name),
      h('span', { class: `pill ${s.state}`, 'data-state': s.state }, s.state)),
    h('dl', { class: 'facts' },
      fact('Kind', s.kind),
      fact('Server', s.server || '—'),
      fact('Revision', s.protocol_version || '—'),
      fact('Era', s.era || '—'),
      fact('Tools', `${s.tools_exposed} offered (${s.tools} listed)`),
      fact('Restarts', String(s.restarts)),
      s.pid ? fact('Process', String(s.pid)) : null,
      fact('Enabled', s.enabled ? 'yes' : 'no')),
    s.last_error ? h('p', { class: 'error-text' }, h('strong', {}, 'Last error: '), s.last_error) : null,
    s.stderr_tail && s.stderr_tail.length
      ? h('details', {}, h('summary', {}, `stderr (last ${s.stderr_tail.length} lines)`), h('pre', { class: 'log' }, s.stderr_tail.join('\n')))
      : null,
    h('div', { class: 'actions' },
      h('button', { type: 'button', disabled: busy.has(s.name) || !s.enabled, onclick: () => act(s.name, 'restart') }, 'Restart'),
      s.enabled
        ? h('button', { type: 'button', class: 'secondary', disabled: busy.has(s.name), onclick: () => act(s.name, 'disable') }, 'Disable')
        : h('button', { type: 'button', class: 'secondary', disabled: busy.has(s.name), onclick: () => act(s.name, 'enable') }, 'Enable')));

  async function refresh() {
    clearTimeout(timer);
    try {
      const servers = await get('/servers');
      if (stopped) return;
      ctx.setConn('servers', 'live');
      // Drawn again only when something changed, so buttons stay put under the pointer.
      const key = JSON.stringify(servers) + [...busy].join();
      if (key === last) {
        timer = setTimeout(refresh, POLL_MS);
        return;
      }
      last = key;
      // Keep focus where it was across a refresh.
      const focused = document.activeElement && list.contains(document.activeElement)
        ? [document.activeElement.closest('article')?.getAttribute('aria-label'), document.activeElement.textContent] : null;
      fill(list, servers.length ? servers.map(card) : state('empty', 'No servers are configured.'));
      if (focused) {
        const art = [...list.querySelectorAll('article')].find((a) => a.getAttribute('aria-label') === focused[0]);
        const btn = art && [...art.querySelectorAll('button')].find((b) => b.textContent === focused[1]);
        if (btn) btn.focus();
      }
    } catch (e) {
      if (stopped) return;
      last = '';
      ctx.setConn('servers', 'reconnecting');
      if (!list.querySelector('article')) fill(list, state('error', `Cannot load the servers: ${e.message}`));
    }
    if (!stopped) timer = setTimeout(refresh, POLL_MS);
  }
  refresh();
  return () => { stopped = true; clearTimeout(timer); ctx.setConn('servers', null); };
}

function fact(name, value) {
  return [h('dt', {}, name), h('dd', {}, value)];
}
