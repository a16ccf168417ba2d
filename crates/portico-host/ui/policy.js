// Policy: the rules in effect, in order; "explain" for a tool and arguments; the stored
// "always allow" answers, with revoke.

import { get, post, del, seg } from './api.js';
import { h, fill, state, when } from './dom.js';

const CONDITIONS = ['server', 'tool', 'method', 'principal', 'annotations', 'args', 'rate', 'rate_by', 'hide', 'review_result'];

export function mount(main) {
  const rules = h('div', {}, state('loading', 'Loading the rules…'));
  const always = h('div', { 'aria-live': 'polite' }, state('loading', 'Loading the stored answers…'));
  const tool = h('select', { id: 'explain-tool', required: true });
  const args = h('textarea', { id: 'explain-args', class: 'mono', rows: '3' }, '{}');
  const principal = h('input', { id: 'explain-principal', type: 'text', value: 'local' });
  const out = h('div', { 'aria-live': 'polite' });
  const explain = h('form', { class: 'explain' },
    h('div', { class: 'field' }, h('label', { for: 'explain-tool' }, 'Tool'), tool),
    h('div', { class: 'field' }, h('label', { for: 'explain-args' }, 'Arguments (JSON)'), args),
    h('div', { class: 'field' }, h('label', { for: 'explain-principal' }, 'Principal'), principal),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Explain')),
    out);
  fill(main, h('h1', {}, 'Policy'),
    h('section', { 'aria-labelledby': 'h-rules' }, h('h2', { id: 'h-rules' }, 'Rules, in order'),
      h('p', { class: 'note' }, 'The first rule that matches decides; then the stored “always allow” answers; then the defaults.'), rules),
    h('section', { 'aria-labelledby': 'h-explain' }, h('h2', { id: 'h-explain' }, 'Explain'), explain),
    h('section', { 'aria-labelledby': 'h-always' }, h('h2', { id: 'h-always' }, 'Stored “always allow” answers'), always));

  explain.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let a;
    try {
      a = JSON.parse(args.value || '{}');
    } catch (e) {
      fill(out, state('error', `The arguments are not valid JSON: ${e.message}`));
      return;
    }
    fill(out, state('loading', 'Explaining…'));
    try {
      const r = await post('/policy/explain', { tool: tool.value, arguments: a, principal: principal.value || 'local' });
      fill(out, h('pre', { class: `explanation decision-${r.explanation.decision.action}` }, r.text));
    } catch (e) {
      fill(out, state('error', e.message));
    }
  });

  (async () => {
    try {
      const p = await get('/policy');
      const list = p.rules || [];
      fill(rules,
        list.length ? h('ol', { class: 'rules' }, list.map((r, i) => h('li', {},
          h('span', { class: `pill ${r.decision || 'allow'}` }, r.decision || 'allow'), ' ',
          h('strong', {}, r.name || `policy.rules[${i}]`),
          h('dl', { class: 'facts' }, CONDITIONS.filter((k) => r[k] !== undefined)
            .map((k) => [h('dt', {}, k), h('dd', {}, typeof r[k] === 'string' ? r[k] : JSON.stringify(r[k]))])),
          r.reason ? h('p', { class: 'note' }, r.reason) : null)))
          : state('empty', 'No rules: the defaults decide.'),
        h('h3', {}, 'Defaults, when no rule matches'),
        h('dl', { class: 'facts' }, Object.entries(p.defaults || {}).map(([k, v]) => [h('dt', {}, k), h('dd', {}, String(v))])));
    } catch (e) {
      fill(rules, state('error', `Cannot load the rules: ${e.message}`));
    }
    try {
      const tools = await get('/tools');
      fill(tool, tools.map((t) => h('option', { value: t.name }, t.name)));
    } catch (e) {
      fill(out, state('error', `Cannot load the tools: ${e.message}`));
    }
  })();

  const loadAlways = async () => {
    try {
      const list = await get('/policy/always');
      fill(always, list.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'log keep always' },
        h('thead', {}, h('tr', {}, ['Server', 'Tool', 'Principal', 'Stored', ''].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, list.map((r) => h('tr', { 'data-id': r.id },
          h('td', {}, r.server),
          h('td', {}, r.exposed || r.tool),
          h('td', {}, r.principal || 'anyone'),
          h('td', {}, when(r.created_at * 1000)),
          h('td', {}, h('button', {
            type: 'button', class: 'danger small', 'aria-label': `Revoke always allow of ${r.exposed || r.tool} for ${r.principal || 'anyone'}`,
            onclick: async () => {
              try { await del(`/policy/always/${seg(r.id)}`); } catch (e) { fill(always, state('error', e.message)); return; }
              loadAlways();
            },
          }, 'Revoke')))))))
        : state('empty', 'None stored. “Always allow” on an approval stores one.'));
    } catch (e) {
      fill(always, state('error', `Cannot load the stored answers: ${e.message}`));
    }
  };
  loadAlways();
  const timer = setInterval(loadAlways, 3000);
  return () => clearInterval(timer);
}
