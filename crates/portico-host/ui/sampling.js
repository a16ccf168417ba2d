// Sampling requests from upstreams, as a person reads them: which server asks the model to
// answer what (messages, system prompt, model preferences, limits), an editor for the text
// before it goes on, and the model's completion before it goes back to the server. Every
// value is untrusted and goes in as text.

import { h, tree } from './dom.js';

let ids = 0;
const nextId = (what) => `sampling-${what}-${++ids}`;

/** A sampling message's or completion's content as a list of blocks, whichever form it came in. */
function blocks(content) {
  if (Array.isArray(content)) return content;
  return content === undefined || content === null ? [] : [content];
}

/** One content block: text as text, the others summarized by their type. */
function block(b) {
  const type = b && typeof b === 'object' ? String(b.type ?? 'unknown') : typeof b;
  if (type === 'text') return h('pre', { class: 'text' }, String(b.text ?? ''));
  let what;
  switch (type) {
    case 'image':
    case 'audio': {
      const size = typeof b.data === 'string' ? `, ${Math.floor((b.data.length * 3) / 4)} bytes` : '';
      what = `${type === 'image' ? 'An image' : 'Audio'} (${String(b.mimeType ?? 'no media type')}${size})`;
      break;
    }
    case 'tool_use':
      what = `A call of the tool ${String(b.name ?? '?')}`;
      break;
    case 'tool_result':
      what = `The result of tool call ${String(b.toolUseId ?? '?')}`;
      break;
    default:
      what = `Content of type ${type}`;
  }
  return h('p', { class: 'note block-summary' }, `[${what}]`);
}

/** The messages as a numbered list: who says it, then what. */
function messageList(messages) {
  if (!Array.isArray(messages) || messages.length === 0) return h('p', { class: 'note' }, 'No messages.');
  return h('ol', { class: 'messages', 'aria-label': 'Messages' },
    messages.map((m, i) => h('li', { class: 'message' },
      h('span', { class: 'role' }, `${i + 1}. ${String((m && m.role) ?? 'unknown role')}`),
      blocks(m && m.content).map(block))));
}

const num = (v) => (v === undefined || v === null ? null : String(v));

/** Model preferences, limits and the rest of the request, as terms and values. */
function settings(params) {
  const prefs = params.modelPreferences && typeof params.modelPreferences === 'object' ? params.modelPreferences : null;
  const hints = prefs && Array.isArray(prefs.hints) ? prefs.hints.map((x) => String((x && x.name) ?? '?')).join(', ') : '';
  const rows = [
    ['Max tokens', num(params.maxTokens) ?? '—'],
    ['Model hints', hints || 'none'],
    ['Cost priority', prefs && num(prefs.costPriority)],
    ['Speed priority', prefs && num(prefs.speedPriority)],
    ['Intelligence priority', prefs && num(prefs.intelligencePriority)],
    ['Temperature', num(params.temperature)],
    ['Stop sequences', Array.isArray(params.stopSequences) ? params.stopSequences.map((s) => JSON.stringify(s)).join(', ') : null],
    ['Include context', num(params.includeContext)],
    ['Tools offered', Array.isArray(params.tools) ? params.tools.map((t) => String((t && t.name) ?? '?')).join(', ') || 'none' : null],
  ];
  return h('dl', { class: 'facts', 'aria-label': 'Model preferences and limits' },
    rows.filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** What a sampling approval shows: the request, readable. */
export function samplingRequest(p) {
  const params = p.arguments && typeof p.arguments === 'object' ? p.arguments : {};
  const system = typeof params.systemPrompt === 'string' ? params.systemPrompt : null;
  return h('section', { class: 'sampling', 'aria-label': 'The sampling request' },
    h('h3', {}, 'Messages'),
    messageList(params.messages),
    h('h3', {}, 'System prompt'),
    system === null ? h('p', { class: 'note' }, 'None.') : h('pre', { class: 'text system-prompt' }, system),
    h('h3', {}, 'Model preferences and limits'),
    settings(params),
    h('details', { class: 'raw' }, h('summary', {}, 'The whole request'), tree(params)));
}

/** Whether a result review is a sampling completion on its way back to an upstream. */
export function isCompletion(p) {
  return p.kind === 'result' && (p.original === 'sampling/createMessage' || /completion/i.test(String(p.reason ?? '')));
}

/** What a completion review shows: the model's answer, as text, and where it goes. */
export function completion(p) {
  const r = p.arguments && typeof p.arguments === 'object' ? p.arguments : {};
  return h('section', { class: 'sampling completion', 'aria-label': 'The completion' },
    h('p', { class: 'asks' }, 'Your model answered server ', h('strong', {}, p.server),
      '. Pass it on sends this answer to the server; Withhold sends the server an error instead.'),
    h('h3', {}, 'The answer'),
    h('div', { class: 'answer' }, blocks(r.content).map(block)),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Role'), h('dd', {}, String(r.role ?? '—')),
      h('dt', {}, 'Model'), h('dd', {}, String(r.model ?? '—')),
      h('dt', {}, 'Stop reason'), h('dd', {}, String(r.stopReason ?? '—'))),
    h('details', { class: 'raw' }, h('summary', {}, 'The whole completion'), tree(r)));
}

/** A labelled text area. */
function area(label, value, rows, extra = {}) {
  const id = nextId('field');
  const el = h('textarea', { id, rows: String(rows), ...extra });
  el.value = value;
  return { el, field: h('div', { class: 'field' }, h('label', { for: id }, label), el) };
}

/** The form for the text of each message and the system prompt; `read()` gives the params. */
function textForm(params) {
  const edits = [];
  const messages = Array.isArray(params.messages) ? params.messages : [];
  const rows = messages.map((m, i) => {
    const list = blocks(m && m.content);
    const many = Array.isArray(m && m.content);
    return list.map((b, j) => {
      const name = `Message ${i + 1} (${String((m && m.role) ?? 'unknown role')})${many && list.length > 1 ? `, block ${j + 1}` : ''}`;
      if (!(b && b.type === 'text')) {
        return h('p', { class: 'note' }, `${name}: ${block(b).textContent}, kept as it is.`);
      }
      const a = area(`${name} text`, String(b.text ?? ''), 4);
      edits.push((out) => {
        const target = many ? out.messages[i].content[j] : out.messages[i].content;
        target.text = a.el.value;
      });
      return a.field;
    });
  });
  const hadSystem = typeof params.systemPrompt === 'string';
  const system = area('System prompt', hadSystem ? params.systemPrompt : '', 3);
  const el = h('div', { class: 'text-form' },
    h('fieldset', {}, h('legend', {}, 'Messages'), rows.length ? rows : h('p', { class: 'note' }, 'No messages.')),
    system.field);
  return {
    el,
    read: () => {
      const out = structuredClone(params);
      for (const set of edits) set(out);
      if (system.el.value !== '' || hadSystem) out.systemPrompt = system.el.value;
      return out;
    },
  };
}

/** Why `v` cannot be sent as a sampling request, or null. */
function problem(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'The request must be a JSON object.';
  if (!Array.isArray(v.messages)) return 'The request needs "messages", an array.';
  if (typeof v.maxTokens !== 'number') return 'The request needs "maxTokens", a number.';
  return null;
}

/**
 * The editor of a sampling request: the text of each message and the system prompt, or the
 * whole request as JSON. `send(params)` is called with the edited request; `close()` when the
 * person gives up editing.
 */
export function samplingEditor(p, { send, close }) {
  let params = p.arguments && typeof p.arguments === 'object' ? p.arguments : {};
  let form = textForm(params);
  const holder = h('div', {}, form.el);
  const rawId = nextId('raw');
  const raw = h('textarea', { id: rawId, class: 'mono', rows: '12', spellcheck: 'false' });
  const rawField = h('div', { class: 'field', hidden: true }, h('label', { for: rawId }, 'The request as JSON'), raw);
  const error = h('p', { class: 'error-text', role: 'alert' });
  let rawMode = false;
  const toggle = h('button', { type: 'button', class: 'secondary small', 'aria-pressed': 'false' }, 'Edit as JSON');
  const parsed = () => {
    let v;
    try {
      v = JSON.parse(raw.value);
    } catch (e) {
      error.textContent = `The JSON does not parse: ${e.message}`;
      return null;
    }
    const why = problem(v);
    error.textContent = why || '';
    return why ? null : v;
  };
  toggle.addEventListener('click', () => {
    error.textContent = '';
    if (!rawMode) {
      raw.value = JSON.stringify(form.read(), null, 2);
    } else {
      const v = parsed();
      if (!v) return;
      params = v;
      form = textForm(params);
      holder.replaceChildren(form.el);
    }
    rawMode = !rawMode;
    holder.hidden = rawMode;
    rawField.hidden = !rawMode;
    toggle.textContent = rawMode ? 'Edit as a form' : 'Edit as JSON';
    toggle.setAttribute('aria-pressed', String(rawMode));
    (rawMode ? raw : holder.querySelector('textarea'))?.focus();
  });
  const submit = h('button', { type: 'submit' }, 'Allow once (edited)');
  const cancel = h('button', { type: 'button', class: 'secondary', onclick: () => close() }, 'Stop editing');
  const el = h('form', { class: 'sampling-editor', id: nextId('editor'), 'aria-label': `Edit the sampling request from ${p.server}` },
    h('h3', {}, 'Edit the request'),
    h('p', { class: 'note' }, 'The model gets the request as edited here; the server is not told it was changed.'),
    toggle, holder, rawField, error,
    h('div', { class: 'actions' }, submit, cancel));
  el.addEventListener('submit', (ev) => {
    ev.preventDefault();
    error.textContent = '';
    const v = rawMode ? parsed() : form.read();
    if (v) send(v);
  });
  el.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      ev.preventDefault();
      close();
    }
  });
  return {
    el,
    focus: () => el.querySelector('textarea')?.focus(),
    failed: (message) => { error.textContent = message; },
  };
}
