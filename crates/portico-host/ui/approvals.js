// Approvals: calls (and results to review, and sampling requests) waiting for a person, live,
// with a countdown and the four answers. Every button is reachable with Tab; the first
// waiting approval's "Allow once" gets focus when the page opens.

import { live, post, seg } from './api.js';
import { h, fill, state, tree, elapsed, when } from './dom.js';

const CHOICES = [
  ['allow_once', 'Allow once', ''],
  ['allow_session', 'Allow for this session', 'secondary'],
  ['allow_always', 'Always allow', 'secondary'],
  ['deny', 'Deny', 'danger'],
];

const KIND = { call: 'Call', result: 'Result to review', sampling: 'Sampling request' };

export function mount(main, ctx) {
  const list = h('div', { class: 'cards' });
  const note = h('p', { class: 'note', role: 'status', 'aria-live': 'polite' });
  fill(main, h('h1', {}, 'Approvals'), note, list);
  list.append(state('loading', 'Waiting for the live stream…'));
  const waiting = new Map();
  let first = true;

  const draw = () => {
    const items = [...waiting.values()].sort((a, b) => a.requested_at - b.requested_at);
    const focusedId = document.activeElement?.closest?.('article')?.dataset.id;
    fill(list, items.length ? items.map(card) : state('empty', 'Nothing is waiting for approval.'));
    const again = focusedId && list.querySelector(`article[data-id="${CSS.escape(focusedId)}"] button`);
    if (again) again.focus();
    else if (first && items.length) {
      list.querySelector('button')?.focus();
      first = false;
    }
    tick();
  };

  const answer = async (p, choice, label) => {
    note.textContent = '';
    try {
      await post(`/approvals/${seg(p.id)}`, { decision: choice });
      note.textContent = `${label}: ${p.exposed}.`;
    } catch (e) {
      note.textContent = `Not answered: ${e.message}`;
    }
  };

  const card = (p) => h('article', { class: `card approval kind-${p.kind}`, 'data-id': p.id, 'aria-label': `${KIND[p.kind] || p.kind}: ${p.exposed}` },
    h('header', {}, h('h2', {}, p.exposed), h('span', { class: 'pill ask' }, KIND[p.kind] || p.kind)),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Server'), h('dd', {}, p.server),
      h('dt', {}, 'Tool'), h('dd', {}, p.original),
      h('dt', {}, 'Principal'), h('dd', {}, p.principal),
      h('dt', {}, 'Client'), h('dd', {}, p.client || '—'),
      p.session !== null && p.session !== undefined ? [h('dt', {}, 'Session'), h('dd', {}, String(p.session))] : null,
      h('dt', {}, 'Asked'), h('dd', {}, when(p.requested_at)),
      h('dt', {}, 'Denied in'), h('dd', { class: 'countdown', 'data-expires': String(p.expires_at), role: 'timer' }, '')),
    p.reason ? h('p', {}, h('strong', {}, 'Why: '), p.reason) : null,
    h('section', {}, h('h3', {}, p.kind === 'result' ? 'Result' : p.kind === 'sampling' ? 'Messages' : 'Arguments'),
      tree(p.arguments),
      JSON.stringify(p.arguments ?? null).includes('"hmac-sha256:')
        ? h('p', { class: 'note' }, 'Values marked “redacted” were replaced by their keyed hash.') : null),
    h('div', { class: 'actions', role: 'group', 'aria-label': 'Answer' },
      (p.kind === 'call' ? CHOICES : [['allow_once', p.kind === 'result' ? 'Pass it on' : 'Allow', ''], ['deny', p.kind === 'result' ? 'Withhold' : 'Deny', 'danger']])
        .map(([choice, label, cls]) => h('button', { type: 'button', class: cls, onclick: () => answer(p, choice, label) }, label))));

  const tick = () => {
    for (const el of list.querySelectorAll('.countdown')) {
      const left = Number(el.dataset.expires) - Date.now();
      el.textContent = left > 0 ? elapsed(left) : 'expired';
    }
  };
  const timer = setInterval(tick, 1000);

  const stop = live('/approvals/events', {
    open: () => { waiting.clear(); draw(); },
    state: (s) => ctx.setConn('approvals-page', s),
    event: (e) => {
      if (e.event === 'requested') waiting.set(e.id, e);
      else if (e.id) waiting.delete(e.id);
      else if (e.event === 'lagged') waiting.clear();
      draw();
    },
  });
  return () => { stop(); clearInterval(timer); ctx.setConn('approvals-page', null); };
}
