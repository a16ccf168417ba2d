// A form generated from a tool's input schema: strings, numbers, integers, booleans, enums,
// arrays and nested objects. What a schema says that the form cannot show is left to the raw
// JSON editor beside it.

import { h } from './dom.js';

let ids = 0;
const nextId = () => `f${++ids}`;

/**
 * A field for `schema`; returns {el, get} where get() is the value (undefined when empty and
 * not required).
 */
function field(schema, name, required) {
  schema = schema && typeof schema === 'object' ? schema : {};
  const id = nextId();
  // The label is the name alone; "required" is the input's attribute, and a mark beside it.
  const label = h('span', { class: 'label-row' },
    h('label', { for: id }, name), required ? h('span', { class: 'req', 'aria-hidden': 'true' }, ' *') : null);
  const help = schema.description ? h('small', { id: `${id}-help` }, schema.description) : null;
  const described = help ? `${id}-help` : undefined;
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;

  if (Array.isArray(schema.enum)) {
    const select = h('select', { id, 'aria-describedby': described, required },
      required ? null : h('option', { value: '' }, '(none)'),
      schema.enum.map((v, i) => h('option', { value: String(i), selected: schema.default === v }, JSON.stringify(v))));
    return { el: h('div', { class: 'field' }, label, select, help), get: () => (select.value === '' ? undefined : schema.enum[Number(select.value)]) };
  }
  if (type === 'boolean') {
    const box = h('input', { id, type: 'checkbox', checked: schema.default === true, 'aria-describedby': described });
    return { el: h('div', { class: 'field check' }, box, label, help), get: () => box.checked };
  }
  if (type === 'number' || type === 'integer') {
    const input = h('input', {
      id, type: 'number', step: type === 'integer' ? '1' : 'any', required, 'aria-describedby': described,
      min: schema.minimum, max: schema.maximum, value: schema.default ?? '',
    });
    return {
      el: h('div', { class: 'field' }, label, input, help),
      get: () => (input.value === '' ? undefined : Number(input.value)),
    };
  }
  if (type === 'object' || schema.properties) {
    const props = schema.properties || {};
    const req = new Set(schema.required || []);
    const fields = Object.entries(props).map(([k, s]) => [k, field(s, k, req.has(k))]);
    const fs = h('fieldset', { class: 'object' }, h('legend', {}, name), fields.map(([, f]) => f.el),
      fields.length ? null : h('p', { class: 'note' }, 'No properties are described: use raw JSON.'));
    return {
      el: fs,
      get: () => {
        const out = {};
        for (const [k, f] of fields) {
          const v = f.get();
          if (v !== undefined) out[k] = v;
        }
        return Object.keys(out).length || required ? out : undefined;
      },
    };
  }
  if (type === 'array') {
    const items = [];
    const list = h('ol', { class: 'items' });
    const add = () => {
      const f = field(schema.items || {}, `${name}[${items.length}]`, true);
      const li = h('li', {}, f.el);
      const entry = { f, li };
      li.append(h('button', {
        type: 'button', class: 'secondary small', 'aria-label': `Remove item from ${name}`,
        onclick: () => { items.splice(items.indexOf(entry), 1); li.remove(); },
      }, 'Remove'));
      items.push(entry);
      list.append(li);
      const first = li.querySelector('input, select, textarea');
      if (first) first.focus();
    };
    return {
      el: h('fieldset', { class: 'array' }, h('legend', {}, name), help, list,
        h('button', { type: 'button', class: 'secondary small', onclick: add }, `Add item to ${name}`)),
      get: () => {
        const out = items.map(({ f }) => f.get()).filter((v) => v !== undefined);
        return out.length || required ? out : undefined;
      },
    };
  }
  if (type === 'string') {
    const long = !schema.maxLength || schema.maxLength > 200;
    const input = long
      ? h('textarea', { id, rows: '2', required, 'aria-describedby': described }, schema.default ?? '')
      : h('input', { id, type: 'text', required, 'aria-describedby': described, value: schema.default ?? '' });
    return { el: h('div', { class: 'field' }, label, input, help), get: () => (input.value === '' && !required ? undefined : input.value) };
  }
  // No type, or a union the form cannot show: JSON for this value.
  const area = h('textarea', { id, rows: '2', class: 'mono', 'aria-describedby': described, placeholder: 'JSON' });
  return {
    el: h('div', { class: 'field' }, label, area, help || h('small', {}, 'Any JSON value.')),
    get: () => {
      if (area.value.trim() === '') return undefined;
      return JSON.parse(area.value);
    },
  };
}

/**
 * The form for a tool's `inputSchema`, with a raw JSON editor to switch to. `value()` throws
 * on JSON that does not parse.
 */
export function schemaForm(schema) {
  const root = field({ ...(schema || {}), type: 'object' }, 'Arguments', true);
  const raw = h('textarea', { class: 'mono', rows: '8', 'aria-label': 'Arguments as JSON', hidden: true });
  let rawMode = false;
  const toggle = h('button', { type: 'button', class: 'secondary small', 'aria-pressed': 'false' }, 'Edit as JSON');
  toggle.addEventListener('click', () => {
    if (!rawMode) raw.value = JSON.stringify(root.get() || {}, null, 2);
    rawMode = !rawMode;
    root.el.hidden = rawMode;
    raw.hidden = !rawMode;
    toggle.textContent = rawMode ? 'Edit as a form' : 'Edit as JSON';
    toggle.setAttribute('aria-pressed', String(rawMode));
  });
  return {
    el: h('div', { class: 'schema-form' }, toggle, root.el, raw),
    value: () => (rawMode ? JSON.parse(raw.value || '{}') : root.get() || {}),
  };
}
