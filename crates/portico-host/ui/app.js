// The shell: the session, the pages behind #/…, the approvals badge, the connection state.

import { session, live } from './api.js';
import { fill, state } from './dom.js';
import * as servers from './servers.js';
import * as tools from './tools.js';
import * as approvals from './approvals.js';
import * as activity from './activity.js';
import * as policy from './policy.js';

const pages = { servers, tools, approvals, activity, policy };
const titles = { servers: 'Servers', tools: 'Tools', approvals: 'Approvals', activity: 'Activity', policy: 'Policy' };
const main = document.getElementById('main');
const conn = document.getElementById('conn');
const badge = document.getElementById('approval-count');
let unmount = null;
let pending = new Set();
let page = '';

function setTitle() {
  const n = pending.size;
  document.title = `${n ? `(${n}) ` : ''}${titles[page] || 'Portico'} · Portico`;
  badge.hidden = n === 0;
  badge.textContent = String(n);
  badge.setAttribute('aria-label', `${n} waiting`);
}

function route(ev) {
  const hash = location.hash.replace(/^#\/?/, '');
  const [name, ...rest] = hash.split('/');
  const next = pages[name] ? name : 'servers';
  if (unmount) unmount();
  unmount = null;
  page = next;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.page === next) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  fill(main, state('loading', 'Loading…'));
  setTitle();
  unmount = pages[next].mount(main, { rest: rest.map(decodeURIComponent), setConn }) || null;
  // A page opened from the navigation takes the focus, so a screen reader starts at its top.
  if (ev) main.focus();
}

const conns = new Map();
function setConn(name, s) {
  if (s === null) conns.delete(name);
  else conns.set(name, s);
  const down = [...conns.values()].some((v) => v !== 'live');
  conn.textContent = down ? 'Disconnected: reconnecting…' : 'Live';
  conn.className = down ? 'conn down' : 'conn up';
}

async function start() {
  try {
    await session();
  } catch (e) {
    fill(main, state('error', `Cannot start the session: ${e.message}. Open the login link again.`));
    conn.textContent = 'Signed out';
    return;
  }
  // The badge counts pending approvals on every page.
  live('/approvals/events', {
    open: () => { pending = new Set(); setTitle(); },
    state: (s) => setConn('approvals', s),
    event: (e) => {
      if (e.event === 'requested') pending.add(e.id);
      else pending.delete(e.id);
      setTitle();
    },
  });
  window.addEventListener('hashchange', route);
  route(null);
}

start();
