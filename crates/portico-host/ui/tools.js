// Tools: the registry with search and a filter per server; a tool's page with its
// description, annotations and schemas, an on/off switch, and "Try it".

import { get, post, seg } from './api.js';
import { h, fill, state, json } from './dom.js';
import { schemaForm } from './form.js';
import { renderResult } from './result.js';

export function mount(main, ctx) {
  const search = h('input', { type: 'search', id: 'tool-search', placeholder: 'Search tools', 'aria-label': 'Search tools' });
  const server = h('select', { id: 'tool-server', 'aria-label': 'Server' }, h('option', { value: '' }, 'All servers'));
  const list = h('ul', { class: 'tool-list', 'aria-label': 'Tools' });
  const detail = h('section', { class: 'tool-detail', 'aria-live': 'polite' });
  fill(main, h('h1', {}, 'Tools'),
    h('div', { class: 'split' },
      h('div', { class: 'pane' }, h('div', { class: 'filters' }, search, server), list),
      detail));
  let tools = [];
  const selected = ctx.rest[0];

  const draw = () => {
    const q = search.value.trim().toLowerCase();
    const shown = tools.filter((t) => (!server.value || t.server === server.value)
      && (!q || t.name.toLowerCase().includes(q) || String(t.tool.description || '').toLowerCase().includes(q)));
    fill(list, shown.length ? shown.map((t) => h('li', {},
      h('a', { href: `#/tools/${seg(t.name)}`, 'aria-current': t.name === selected ? 'page' : null },
        h('span', { class: 'name' }, t.name),
        t.enabled ? null : h('span', { class: 'pill off' }, 'off'),
        h('span', { class: 'note' }, t.tool.title || t.server))))
      : state('empty', tools.length ? 'No tool matches.' : 'No tools are offered yet.'));
  };
  search.addEventListener('input', draw);
  server.addEventListener('change', draw);

  const load = async () => {
    try {
      tools = await get('/tools');
    } catch (e) {
      fill(list, state('error', `Cannot load the tools: ${e.message}`));
      return;
    }
    const servers = [...new Set(tools.map((t) => t.server))].sort();
    fill(server, h('option', { value: '' }, 'All servers'), servers.map((s) => h('option', { value: s }, s)));
    draw();
    const t = tools.find((x) => x.name === selected);
    if (selected && !t) fill(detail, state('error', `No tool ${selected} is offered.`));
    else if (t) showTool(detail, t, load);
    else fill(detail, state('empty', 'Pick a tool to see it and try it.'));
  };
  load();
  return null;
}

function showTool(detail, t, reload) {
  const tool = t.tool;
  const form = schemaForm(tool.inputSchema);
  const out = h('div', { class: 'call-out', 'aria-live': 'polite' });
  const call = h('button', { type: 'submit' }, 'Call');
  const onoff = h('input', { type: 'checkbox', id: 'tool-enabled', checked: t.enabled });
  const onoffNote = h('span', { class: 'note', role: 'status' });
  onoff.addEventListener('change', async () => {
    try {
      await post(`/tools/${seg(t.name)}/enabled`, { enabled: onoff.checked });
      onoffNote.textContent = onoff.checked ? 'Offered to clients again.' : 'Hidden from clients; they were told (list_changed).';
    } catch (e) {
      onoff.checked = !onoff.checked;
      onoffNote.textContent = e.message;
    }
  });
  const submit = async (ev) => {
    ev.preventDefault();
    let args;
    try {
      args = form.value();
    } catch (e) {
      fill(out, state('error', `The arguments are not valid JSON: ${e.message}`));
      return;
    }
    call.disabled = true;
    fill(out, state('loading', 'Calling… (it may wait for an approval; see Approvals and Activity)'));
    try {
      const result = await post(`/tools/${seg(t.name)}/call`, { arguments: args });
      fill(out, renderResult(result));
    } catch (e) {
      fill(out, state('error', `The call failed: ${e.message}`));
    } finally {
      call.disabled = false;
    }
  };
  const ann = tool.annotations || {};
  fill(detail,
    h('h2', {}, tool.title || t.name),
    h('p', { class: 'note' }, h('code', {}, t.name), ` from server ${t.server} (its own name: ${t.original})`),
    h('p', { class: 'description' }, tool.description || '(no description)'),
    (t.warnings || []).map((w) => h('p', { class: 'warning', role: 'note' }, h('strong', {}, 'Careful: '), w)),
    h('div', { class: 'field check' }, onoff, h('label', { for: 'tool-enabled' }, 'Offered to clients'), onoffNote),
    t.hidden && t.enabled ? h('p', { class: 'note' }, 'Policy hides this tool from clients.') : null,
    perSession(t, reload),
    Object.keys(ann).length
      ? h('section', {}, h('h3', {}, 'Annotations'), h('dl', { class: 'facts' },
        Object.entries(ann).map(([k, v]) => [h('dt', {}, k), h('dd', {}, JSON.stringify(v))])),
        h('p', { class: 'note' }, 'Annotations come from the server and are hints, not promises.'))
      : null,
    h('details', {}, h('summary', {}, 'Input schema'), json(tool.inputSchema || {})),
    tool.outputSchema ? h('details', {}, h('summary', {}, 'Output schema'), json(tool.outputSchema)) : null,
    h('section', { class: 'try' },
      h('h3', {}, 'Try it'),
      h('p', { class: 'note' }, 'The call goes through policy, approval and the activity log like any other, as this browser session.'),
      h('form', { onsubmit: submit }, form.el, h('div', { class: 'actions' }, call)),
      out));
}

/** The switch for one client session: which sessions it is off for, and switching it off for one more. */
function perSession(t, reload) {
  const box = h('section', { class: 'per-session', 'aria-labelledby': 'h-per-session' },
    h('h3', { id: 'h-per-session' }, 'For one client session'), state('loading', 'Loading the sessions…'));
  const note = h('p', { class: 'note', role: 'status' });
  const toggle = async (session, enabled) => {
    try {
      await post(`/tools/${seg(t.name)}/enabled`, { enabled, session });
      await reload();
    } catch (e) {
      note.textContent = e.message;
    }
  };
  (async () => {
    let sessions;
    try {
      sessions = await get('/sessions');
    } catch (e) {
      fill(box, h('h3', { id: 'h-per-session' }, 'For one client session'), state('error', `Cannot load the sessions: ${e.message}`));
      return;
    }
    const off = new Set(t.off_for_sessions || []);
    const name = (s) => `${s.client || 'a client'} (session ${s.id})`;
    const on = sessions.filter((s) => !off.has(s.id));
    const pick = h('select', { id: 'per-session-pick' }, on.map((s) => h('option', { value: String(s.id) }, name(s))));
    fill(box,
      h('h3', { id: 'h-per-session' }, 'For one client session'),
      sessions.length === 0
        ? state('empty', 'No client session is connected (stateless clients have none).')
        : null,
      on.length
        ? h('div', { class: 'field' }, h('label', { for: 'per-session-pick' }, 'Client session'), pick,
          h('div', { class: 'actions' }, h('button', {
            type: 'button', class: 'secondary', onclick: () => toggle(Number(pick.value), false),
          }, 'Switch off for this session')))
        : null,
      sessions.filter((s) => off.has(s.id)).map((s) => h('p', {},
        h('span', { class: 'pill off' }, 'off'), ` for ${name(s)} `,
        h('button', { type: 'button', class: 'secondary small', onclick: () => toggle(s.id, true) }, `Switch on for session ${s.id}`))),
      note);
  })();
  return box;
}
