// Approvals: calls (and results to review, and sampling requests) waiting for a person, live,
// with a countdown and the answers. Every button is reachable with Tab; the first waiting
// approval's "Allow once" gets focus when the page opens. A sampling request shows its
// messages and can be edited before it goes on; its completion is shown before it goes back.

import { live, post, seg } from './api.js';
import { h, fill, state, tree, elapsed, when } from './dom.js';
import { samplingRequest, samplingEditor, isCompletion, completion } from './sampling.js';

const CHOICES = [
  ['allow_once', 'Allow once', ''],
  ['allow_session', 'Allow for this session', 'secondary'],
  ['allow_always', 'Always allow', 'secondary'],
  ['deny', 'Deny', 'danger'],
];
const REVIEW = [['allow_once', 'Pass it on', ''], ['deny', 'Withhold', 'danger']];

const KIND = { call: 'Call', result: 'Result to review', sampling: 'Sampling request' };

/** What the approval is about, in a few words. */
function subject(p) {
  if (p.kind === 'sampling') return `sampling request from ${p.server}`;
  if (isCompletion(p)) return `completion for ${p.server}`;
  return p.exposed;
}

export function mount(main, ctx) {
  const list = h('div', { class: 'cards' });
  const note = h('p', { class: 'note', role: 'status', 'aria-live': 'polite' });
  fill(main, h('h1', {}, 'Approvals'), note, list);
  list.append(state('loading', 'Waiting for the live stream…'));
  const waiting = new Map();
  // Each approval's card, kept while it waits (and across a reconnection, which sends the
  // waiting ones again), so an edit in progress survives other events.
  const cards = new Map();
  let stale = new Set();
  let first = true;
  // The focus went to the page when the last card went; the next card that comes takes it.
  let parked = false;

  const draw = () => {
    const items = [...waiting.values()].sort((a, b) => a.requested_at - b.requested_at);
    const focused = document.activeElement;
    let lost = -1;
    [...list.children].forEach((el, i) => {
      if (el.dataset.id && waiting.has(el.dataset.id)) return;
      if (el.contains(focused)) lost = i;
      el.remove();
    });
    if (!items.length) list.append(state('empty', 'Nothing is waiting for approval.'));
    items.forEach((p, i) => {
      let el = cards.get(p.id);
      if (!el) {
        el = card(p);
        cards.set(p.id, el);
      }
      if (list.children[i] !== el) list.insertBefore(el, list.children[i] || null);
    });
    // The focus stays where it was; when its card went, it moves to the next card's first
    // answer, so a person answering from the keyboard can go on (to a completion that comes
    // back a moment after its sampling request was allowed, too).
    const idle = !focused || focused === document.body || focused === main;
    if (lost >= 0) {
      const next = list.children[Math.min(lost, list.children.length - 1)]?.querySelector('button');
      (next || main).focus();
      parked = !next;
    } else if ((first || parked) && items.length && idle) {
      list.querySelector('button')?.focus();
      first = false;
      parked = false;
    }
    tick();
  };

  const answer = async (p, choice, label, params) => {
    note.textContent = '';
    const body = { decision: choice };
    if (params !== undefined) body.params = params;
    try {
      await post(`/approvals/${seg(p.id)}`, body);
      note.textContent = `${label}: ${subject(p)}.`;
      return null;
    } catch (e) {
      note.textContent = `Not answered: ${e.message}`;
      return e.message;
    }
  };

  const buttons = (p, choices) => choices.map(([choice, label, cls]) =>
    h('button', { type: 'button', class: cls, onclick: () => answer(p, choice, label) }, label));

  // A sampling request's answers, with Edit between "Allow once" and the rest.
  const samplingActions = (p, article) => {
    let editor = null;
    const edit = h('button', { type: 'button', class: 'secondary', 'aria-expanded': 'false' }, 'Edit…');
    const closeEditor = () => {
      if (!editor) return;
      editor.el.remove();
      editor = null;
      edit.setAttribute('aria-expanded', 'false');
      edit.removeAttribute('aria-controls');
      edit.focus();
    };
    edit.addEventListener('click', () => {
      if (editor) {
        closeEditor();
        return;
      }
      editor = samplingEditor(p, {
        send: async (params) => {
          const why = await answer(p, 'allow_once', 'Allowed once, edited', params);
          if (why && editor) editor.failed(`Not sent: ${why}`);
        },
        close: closeEditor,
      });
      edit.setAttribute('aria-expanded', 'true');
      edit.setAttribute('aria-controls', editor.el.id);
      article.append(editor.el);
      editor.focus();
    });
    const [once, ...rest] = buttons(p, CHOICES);
    return [once, edit, ...rest];
  };

  const card = (p) => {
    const sampling = p.kind === 'sampling';
    const review = isCompletion(p);
    const kind = sampling ? 'Sampling request' : review ? 'Completion to review' : KIND[p.kind] || p.kind;
    const title = sampling ? `Server ${p.server} asks your model to answer`
      : review ? `Your model's answer, going back to server ${p.server}` : p.exposed;
    const article = h('article', { class: `card approval kind-${p.kind}${review ? ' kind-completion' : ''}`, 'data-id': p.id, 'aria-label': `${kind}: ${sampling || review ? p.server : p.exposed}` });
    let body;
    if (sampling) body = samplingRequest(p);
    else if (review) body = completion(p);
    else {
      body = h('section', {}, h('h3', {}, p.kind === 'result' ? 'Result' : 'Arguments'),
        tree(p.arguments),
        JSON.stringify(p.arguments ?? null).includes('"hmac-sha256:')
          ? h('p', { class: 'note' }, 'Values marked “redacted” were replaced by their keyed hash.') : null);
    }
    const actions = h('div', { class: 'actions', role: 'group', 'aria-label': 'Answer' });
    fill(article,
      h('header', {}, h('h2', {}, title), h('span', { class: 'pill ask' }, kind)),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Server'), h('dd', {}, p.server),
        h('dt', {}, sampling || review ? 'Method' : 'Tool'), h('dd', {}, p.original),
        h('dt', {}, 'Principal'), h('dd', {}, p.principal),
        h('dt', {}, 'Client'), h('dd', {}, p.client || '—'),
        p.session !== null && p.session !== undefined ? [h('dt', {}, 'Session'), h('dd', {}, String(p.session))] : null,
        h('dt', {}, 'Asked'), h('dd', {}, when(p.requested_at)),
        h('dt', {}, p.kind === 'result' ? 'Withheld in' : 'Denied in'), h('dd', { class: 'countdown', 'data-expires': String(p.expires_at), role: 'timer' }, '')),
      p.reason ? h('p', {}, h('strong', {}, 'Why: '), p.reason) : null,
      (p.warnings || []).map((w) => h('p', { class: 'warning', role: 'note' }, h('strong', {}, 'Careful, about this tool: '), w)),
      body,
      actions);
    actions.append(...(sampling ? samplingActions(p, article) : buttons(p, p.kind === 'call' ? CHOICES : REVIEW)));
    return article;
  };

  const tick = () => {
    for (const el of list.querySelectorAll('.countdown')) {
      const left = Number(el.dataset.expires) - Date.now();
      el.textContent = left > 0 ? elapsed(left) : 'expired';
    }
  };
  const timer = setInterval(tick, 1000);

  const stop = live('/approvals/events', {
    open: () => {
      // The stream sends the waiting approvals again; cards not sent again since the last
      // reconnection were answered meanwhile.
      for (const id of stale) if (!waiting.has(id)) cards.delete(id);
      stale = new Set(cards.keys());
      waiting.clear();
      draw();
    },
    state: (s) => ctx.setConn('approvals-page', s),
    event: (e) => {
      if (e.event === 'requested') {
        waiting.set(e.id, e);
        stale.delete(e.id);
      } else if (e.id) {
        waiting.delete(e.id);
        cards.delete(e.id);
      } else if (e.event === 'lagged') waiting.clear();
      draw();
    },
  });
  return () => { stop(); clearInterval(timer); ctx.setConn('approvals-page', null); };
}
