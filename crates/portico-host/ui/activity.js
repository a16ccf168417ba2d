// Activity: the calls in progress (live, with elapsed time, progress and a cancel button),
// then a live tail of the activity log with filters, a record's detail, and the chain's
// verification.

import { get, live, post, seg } from './api.js';
import { h, fill, state, tree, elapsed, when } from './dom.js';

const STATUSES = ['', 'success', 'error', 'denied', 'cancelled', 'timeout'];
const DECISIONS = ['', 'allow', 'ask', 'deny'];
const MAX_ROWS = 200;

export function mount(main, ctx) {
  const running = h('div', { class: 'cards', id: 'in-flight' });
  const filters = h('form', { class: 'filters', 'aria-label': 'Filter the log' });
  const input = (name, label, attrs = {}) => {
    const el = h('input', { id: `f-${name}`, name, type: 'text', ...attrs });
    filters.append(h('div', { class: 'field' }, h('label', { for: `f-${name}` }, label), el));
    return el;
  };
  const select = (name, label, options) => {
    const el = h('select', { id: `f-${name}`, name }, options.map((o) => h('option', { value: o }, o || 'any')));
    filters.append(h('div', { class: 'field' }, h('label', { for: `f-${name}` }, label), el));
    return el;
  };
  input('server', 'Server');
  input('tool', 'Tool');
  select('status', 'Status', STATUSES);
  select('decision', 'Decision', DECISIONS);
  input('principal', 'Principal');
  input('since', 'Since', { placeholder: '1h, 2026-05-01' });
  filters.append(h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Apply')));
  const rows = h('tbody', {});
  const table = h('table', { class: 'log' },
    h('caption', { class: 'sr-only' }, 'Activity log, newest first'),
    h('thead', {}, h('tr', {}, ['Time', 'Tool', 'Principal', 'Decision', 'Status', 'Took', ''].map((c) => h('th', { scope: 'col' }, c)))),
    rows);
  const logState = h('div', { role: 'status' });
  const detail = h('section', { class: 'record-detail', 'aria-live': 'polite', tabindex: '-1' });
  const chain = h('p', { class: 'chain', role: 'status' }, 'Chain: not checked yet.');
  const verify = h('button', { type: 'button', class: 'secondary' }, 'Verify the chain');

  fill(main,
    h('h1', {}, 'Activity'),
    h('section', { 'aria-labelledby': 'h-running' }, h('h2', { id: 'h-running' }, 'In progress'), running),
    h('section', { 'aria-labelledby': 'h-log' },
      h('h2', { id: 'h-log' }, 'Log'),
      h('div', { class: 'chain-row' }, chain, verify),
      filters, logState, h('div', { class: 'table-wrap' }, table), detail));

  // Calls in progress.
  const calls = new Map();
  const drawCalls = () => {
    const items = [...calls.values()].sort((a, b) => a.started_at - b.started_at);
    fill(running, items.length ? items.map((c) => h('article', { class: 'card call', 'data-id': c.id, 'aria-label': `Call ${c.tool}` },
      h('header', {}, h('h3', {}, c.tool), h('span', { class: `pill ${c.stage}` }, c.stage === 'approval' ? 'waiting for approval' : 'running')),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Server'), h('dd', {}, c.server),
        h('dt', {}, 'Principal'), h('dd', {}, c.principal),
        h('dt', {}, 'Client'), h('dd', {}, c.client || (c.principal.startsWith('ui:') ? 'the web UI' : '—')),
        h('dt', {}, 'Elapsed'), h('dd', { class: 'elapsed', 'data-start': String(c.started_at) }, elapsed(Date.now() - c.started_at))),
      c.progress ? h('div', { class: 'progress' },
        c.progress.total ? h('progress', { max: String(c.progress.total), value: String(c.progress.progress), 'aria-label': 'Progress' }) : null,
        h('span', {}, `${c.progress.message || 'progress'} (${c.progress.progress}${c.progress.total ? ` of ${c.progress.total}` : ''})`)) : null,
      h('div', { class: 'actions' }, h('button', {
        type: 'button', class: 'danger', onclick: async (ev) => {
          ev.target.disabled = true;
          try { await post(`/calls/${seg(c.id)}/cancel`); } catch (e) { ev.target.disabled = false; ev.target.title = e.message; }
        },
      }, 'Cancel'))))
      : state('empty', 'No call is in progress.'));
  };
  const tick = () => {
    for (const el of running.querySelectorAll('.elapsed')) el.textContent = elapsed(Date.now() - Number(el.dataset.start));
  };
  const timer = setInterval(tick, 500);
  const stopCalls = live('/calls/events', {
    open: () => { calls.clear(); drawCalls(); },
    state: (s) => ctx.setConn('calls', s),
    event: (e) => {
      if (e.event === 'started' || e.event === 'updated') calls.set(e.call.id, e.call);
      else if (e.event === 'ended') calls.delete(e.id);
      drawCalls();
    },
  });

  // The log: a query, then a live tail with the same filter.
  const row = (r) => h('tr', { class: `status-${r.status}` },
    h('td', {}, when(r.start)),
    h('td', {}, h('span', { class: 'name' }, r.tool || r.method), h('br', {}), h('small', {}, r.server || '')),
    h('td', {}, r.principal || ''),
    h('td', {}, r.decision || ''),
    h('td', {}, h('span', { class: `pill ${r.status}` }, r.status)),
    h('td', {}, r.duration_ms != null ? `${Math.round(r.duration_ms)} ms` : ''),
    h('td', {}, h('button', { type: 'button', class: 'secondary small', onclick: () => show(r.id), 'aria-label': `Details of ${r.tool || r.method} at ${when(r.start)}` }, 'Details')));
  let stopTail = null;
  const query = () => {
    const params = new URLSearchParams();
    for (const [k, v] of new FormData(filters)) if (v) params.set(k, v);
    return params.toString();
  };
  const load = async () => {
    if (stopTail) stopTail();
    const q = query();
    fill(logState, state('loading', 'Loading the log…'));
    let records;
    try {
      records = await get(`/log?${q}`);
    } catch (e) {
      fill(logState, state('error', `Cannot read the log: ${e.message}`));
      rows.replaceChildren();
      return;
    }
    records.sort((a, b) => b.seq - a.seq);
    fill(rows, records.map(row));
    fill(logState, records.length ? null : state('empty', 'No record matches.'));
    stopTail = live(`/log/events?${q}`, {
      state: (s) => ctx.setConn('log', s),
      event: (e) => {
        if (e.event !== 'record') return;
        logState.replaceChildren();
        rows.prepend(row(e.record));
        while (rows.children.length > MAX_ROWS) rows.lastChild.remove();
      },
    });
  };
  filters.addEventListener('submit', (ev) => { ev.preventDefault(); load(); });

  const show = async (id) => {
    fill(detail, state('loading', 'Loading the record…'));
    try {
      const r = await get(`/log/${seg(id)}`);
      const rec = r.record || {};
      const sum = r.summary || {};
      const keys = ['status', 'policy.decision', 'policy.rule', 'policy.reason', 'user.id', 'client_name', 'mcp.session.id',
        'approval.channel', 'approval.by', 'approval.scope', 'approval.time', 'start_time', 'end_time', 'duration_us', 'error.type', 'truncated'];
      fill(detail,
        h('h3', {}, `Record ${r.seq}: ${sum.tool || sum.method || ''}`),
        h('button', { type: 'button', class: 'secondary small', onclick: () => detail.replaceChildren() }, 'Close'),
        h('dl', { class: 'facts' },
          keys.filter((k) => rec[k] != null)
            .map((k) => [h('dt', {}, k), h('dd', {}, typeof rec[k] === 'object' ? JSON.stringify(rec[k]) : String(rec[k]))])),
        rec.arguments !== undefined ? h('section', {}, h('h4', {}, 'Arguments'), tree(rec.arguments)) : null,
        rec.result !== undefined ? h('section', {}, h('h4', {}, 'Result'), tree(rec.result)) : null,
        rec.error !== undefined ? h('section', {}, h('h4', {}, 'Error'), tree(rec.error)) : null,
        h('details', {}, h('summary', {}, 'The whole record'), tree(rec)),
        h('p', { class: 'note' }, `Hash ${r.hash}`));
      detail.focus();
    } catch (e) {
      fill(detail, state('error', `Cannot read the record: ${e.message}`));
    }
  };

  const runVerify = async () => {
    verify.disabled = true;
    chain.textContent = 'Chain: verifying…';
    chain.className = 'chain';
    try {
      const r = await post('/log/verify');
      chain.textContent = r.ok
        ? `Chain: intact (${r.records} records, ${r.checkpoints} signed checkpoints, ${r.unsigned_tail} not yet signed).`
        : `Chain: BROKEN at seq ${r.first_bad_seq} (${r.problems} problems).`;
      chain.className = r.ok ? 'chain ok' : 'chain bad';
      chain.title = r.text;
    } catch (e) {
      chain.textContent = `Chain: cannot verify (${e.message}).`;
      chain.className = 'chain bad';
    } finally {
      verify.disabled = false;
    }
  };
  verify.addEventListener('click', runVerify);

  load();
  runVerify();
  return () => {
    stopCalls();
    if (stopTail) stopTail();
    clearInterval(timer);
    for (const k of ['calls', 'log']) ctx.setConn(k, null);
  };
}
