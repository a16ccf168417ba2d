// The admin API, as the UI uses it: JSON over fetch with the session cookie, the CSRF token on
// every state-changing request, and live streams that reconnect.

let csrf = null;

/** Why a request failed, with the host's own words. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** Starts the session: who we are and the CSRF token. */
export async function session() {
  const s = await get('/ui/session');
  csrf = s.csrf;
  return s;
}

async function answer(r) {
  let body = null;
  try {
    body = await r.json();
  } catch (_) {
    body = null;
  }
  if (!r.ok) {
    throw new ApiError(r.status, (body && body.error) || `${r.status} ${r.statusText}`);
  }
  return body;
}

export async function get(path) {
  const r = await fetch(path, { credentials: 'same-origin', headers: { accept: 'application/json' } });
  return answer(r);
}

export async function send(method, path, body) {
  const headers = { accept: 'application/json', 'x-portico-csrf': csrf || '' };
  const init = { method, credentials: 'same-origin', headers };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  return answer(r);
}

export const post = (path, body) => send('POST', path, body === undefined ? {} : body);
export const del = (path) => send('DELETE', path);

/**
 * A live stream of JSON events that reconnects when it drops, or when it fell behind and
 * missed some. `on.open()` is called on each (re)connection, before the events that describe
 * the current state; `on.event(e)` for each
 * event; `on.state('live' | 'reconnecting')`. Returns a function that stops it.
 */
export function live(path, on) {
  let source = null;
  let stopped = false;
  let timer = null;
  const connect = () => {
    if (stopped) return;
    source = new EventSource(path);
    source.onopen = () => {
      on.state && on.state('live');
      on.open && on.open();
    };
    source.onmessage = (m) => {
      let e;
      try {
        e = JSON.parse(m.data);
      } catch (_) {
        return;
      }
      if (e.event === 'lagged') {
        // Events were missed: start over, which sends the current state again.
        source.close();
        connect();
        return;
      }
      on.event(e);
    };
    source.onerror = () => {
      on.state && on.state('reconnecting');
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        timer = setTimeout(connect, 2000);
      }
    };
  };
  connect();
  return () => {
    stopped = true;
    clearTimeout(timer);
    if (source) source.close();
  };
}

/** Encodes one path segment. */
export const seg = (s) => encodeURIComponent(s);
