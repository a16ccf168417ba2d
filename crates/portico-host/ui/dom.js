// Building the page without HTML strings: every text from the host goes in as a text node,
// never as markup.

/** An element: h('button', {class: 'x', onclick: f}, 'text', child, …). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'class') {
      el.className = value;
    } else if (key === 'text') {
      el.textContent = String(value);
    } else if (key === 'value') {
      el.value = value;
    } else if (key === 'checked' || key === 'disabled' || key === 'hidden' || key === 'open' || key === 'selected') {
      el[key] = Boolean(value);
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces every child of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A loading, empty or error line. */
export function state(kind, text) {
  return h('p', { class: `state ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

/** 12 s, 3 min 4 s, … */
export function elapsed(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** A local date and time for milliseconds since the epoch. */
export function when(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  return d.toLocaleString();
}

/** JSON as an expandable tree: objects and arrays fold, leaves are text. */
export function tree(value, label) {
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    const summary = `${label !== undefined ? label + ': ' : ''}${Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`}`;
    return h('details', { class: 'tree', open: entries.length <= 12 },
      h('summary', {}, summary),
      h('ul', {}, entries.map(([k, v]) => h('li', {}, tree(v, k)))));
  }
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  const redacted = typeof value === 'string' && value.startsWith('hmac-sha256:');
  return h('span', { class: redacted ? 'leaf redacted' : 'leaf' },
    label !== undefined ? h('span', { class: 'key' }, `${label}: `) : null,
    text,
    redacted ? h('span', { class: 'tag' }, ' redacted') : null);
}

/** JSON, indented, as text; values the log redacted are marked. */
export function json(value) {
  return h('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}
