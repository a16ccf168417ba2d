// The web UI's scenarios in headless Chromium, driven by playwright-core. Started by
// crates/portico-cli/tests/ui.rs against a real `portico serve --ui`, which also holds the
// real downstream MCP client: this script asks it for calls with `@@ {json}` lines on stdout
// and reads its answers, one JSON line each, on stdin.
//
// Environment: PLAYWRIGHT_CORE (the module's path), ADMIN (http://127.0.0.1:PORT), TOKEN (the
// admin bearer token), LOGIN_LINK (a one-time link printed by `portico serve --ui`), SHOTS
// (where screenshots go). Every wait is bounded; the whole run is bounded by a watchdog.
'use strict';

const http = require('http');
const readline = require('readline');
const path = require('path');
const { chromium } = require(process.env.PLAYWRIGHT_CORE);

const ADMIN = process.env.ADMIN;
const TOKEN = process.env.TOKEN;
const SHOTS = process.env.SHOTS;
const WAIT = 20000;

setTimeout(() => {
  console.error('ui_test: the watchdog stopped the run after 240 s');
  process.exit(3);
}, 240000).unref();

// ---- the Rust side: downstream MCP calls ----
const answers = [];
const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (l) => {
  const w = answers.shift();
  if (w) w(JSON.parse(l));
});
function rust(req) {
  return new Promise((resolve) => {
    answers.push(resolve);
    process.stdout.write(`@@ ${JSON.stringify(req)}\n`);
  });
}

// ---- small helpers ----
let passed = 0;
async function step(name, f) {
  const t = Date.now();
  try {
    await f();
  } catch (e) {
    e.message = `${name}: ${e.message}`;
    throw e;
  }
  passed += 1;
  console.error(`ui_test: ok ${name} (${Date.now() - t} ms)`);
}
function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}
async function api(method, p, { body, headers = {}, bearer = true } = {}) {
  const h = { ...headers };
  if (bearer) h.authorization = `Bearer ${TOKEN}`;
  if (body !== undefined) h['content-type'] = 'application/json';
  const r = await fetch(ADMIN + p, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  let json = null;
  try { json = await r.json(); } catch (_) { json = null; }
  return { status: r.status, json };
}
async function until(what, f, ms = WAIT) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
async function visible(page, text) {
  await page.getByText(text, { exact: false }).first().waitFor({ state: 'visible', timeout: WAIT });
}
async function shot(page, name, texts) {
  for (const t of texts) await visible(page, t);
  const w = page.viewportSize().width;
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  check(wide <= w, `${name} fits ${w} px without scrolling sideways (${wide} px)`);
  await page.screenshot({ path: path.join(SHOTS, `${name}-${w}.png`), fullPage: true });
}
async function go(page, hash) {
  await page.goto(`${ADMIN}/ui/#/${hash}`);
  await page.locator('main h1').first().waitFor({ timeout: WAIT });
}

async function login(browser, width, link) {
  const ctx = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(WAIT);
  const r = await page.goto(link);
  check(r.status() === 200, `the login link leads to the UI (${r.status()})`);
  check(!page.url().includes('token='), `the token leaves the address bar (${page.url()})`);
  await page.getByRole('heading', { name: 'Servers' }).waitFor();
  return { ctx, page };
}

async function main() {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    // Playwright gives the browser a fresh temporary --user-data-dir of its own.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const errors = [];
  try {
    const desk = await login(browser, 1280, process.env.LOGIN_LINK);
    desk.page.on('pageerror', (e) => errors.push(String(e)));
    const link2 = await api('POST', '/ui/login-links');
    check(link2.status === 200 && link2.json.url.includes('/ui/login?token='), 'a new login link with the token');
    const phone = await login(browser, 375, link2.json.url);
    const page = desk.page;

    await step('session cookie is HttpOnly, SameSite=Strict, Path=/', async () => {
      const c = (await desk.ctx.cookies()).find((x) => x.name === 'portico_session');
      check(c && c.httpOnly && c.sameSite === 'Strict' && c.path === '/', JSON.stringify(c));
    });

    await step('strict CSP and nosniff on the page', async () => {
      const r = await page.goto(`${ADMIN}/ui/`);
      const h = r.headers();
      check(h['content-security-policy'].includes("script-src 'self'") && h['content-security-policy'].includes("frame-ancestors 'none'"), h['content-security-policy']);
      check(!h['content-security-policy'].includes('unsafe-inline'), 'no unsafe-inline');
      check(h['x-content-type-options'] === 'nosniff', 'nosniff');
    });

    await step('servers page lists the upstreams, ready', async () => {
      await go(page, 'servers');
      await page.locator('article[aria-label="Server ev"] .pill', { hasText: 'ready' }).waitFor();
      await page.locator('article[aria-label="Server hostile"] .pill', { hasText: 'ready' }).waitFor();
      await shot(page, 'servers', ['Servers', 'ev', 'hostile', 'stdio']);
      await go(phone.page, 'servers');
      await shot(phone.page, 'servers', ['Servers', 'ev']);
    });

    await step('no token: the page and the API are refused', async () => {
      const anon = await browser.newContext();
      const p = await anon.newPage();
      let r = await p.goto(`${ADMIN}/ui/`);
      check(r.status() === 401, `GET /ui/ without a session: ${r.status()}`);
      await visible(p, 'needs a login link');
      r = await p.goto(`${ADMIN}/ui/login?token=not-a-token`);
      check(r.status() === 401, `a made-up login token: ${r.status()}`);
      r = await p.goto(process.env.LOGIN_LINK);
      check(r.status() === 401, `a login link used already: ${r.status()}`);
      const a = await api('GET', '/servers', { bearer: false });
      check(a.status === 401, `the API without a token: ${a.status}`);
      await anon.close();
    });

    await step('cross-origin POSTs are refused, from a browser and by hand', async () => {
      const cookie = (await desk.ctx.cookies()).find((x) => x.name === 'portico_session');
      const jar = `portico_session=${cookie.value}`;
      const session = await page.evaluate(async () => (await fetch('/ui/session')).json());
      const post = (headers) => api('POST', '/tools/ev__add/enabled', { bearer: false, body: { enabled: false }, headers: { cookie: jar, ...headers } });
      let r = await post({ origin: 'http://evil.example', 'x-portico-csrf': session.csrf });
      check(r.status === 403, `Origin elsewhere: ${r.status}`);
      r = await post({ origin: ADMIN });
      check(r.status === 403, `no CSRF token: ${r.status}`);
      r = await post({ origin: ADMIN, 'x-portico-csrf': 'f'.repeat(64) });
      check(r.status === 403, `a wrong CSRF token: ${r.status}`);
      r = await post({ origin: ADMIN, 'x-portico-csrf': session.csrf, 'sec-fetch-site': 'cross-site' });
      check(r.status === 403, `Sec-Fetch-Site cross-site: ${r.status}`);
      // A page of another origin in the signed-in browser tries a script POST and a form POST.
      const evil = http.createServer((req, res) => {
        res.setHeader('content-type', 'text/html');
        res.end(`<!doctype html><form id="f" method="post" action="${ADMIN}/servers/ev/disable"></form>
          <script>
            fetch(${JSON.stringify(ADMIN + '/tools/ev__add/enabled')}, { method: 'POST', mode: 'no-cors', credentials: 'include',
              headers: { 'content-type': 'text/plain' }, body: '{"enabled": false}' })
              .finally(() => { document.title = 'sent'; document.getElementById('f').submit(); });
          </script>`);
      });
      await new Promise((r2) => evil.listen(0, '127.0.0.1', r2));
      const evilPage = await desk.ctx.newPage();
      await evilPage.goto(`http://localhost:${evil.address().port}/`);
      await until('the evil page to post', async () => evilPage.url().startsWith(ADMIN));
      await evilPage.close();
      evil.close();
      const tools = await api('GET', '/tools');
      check(tools.json.find((t) => t.name === 'ev__add').enabled === true, 'ev__add is still on');
      const servers = await api('GET', '/servers');
      check(servers.json.find((s) => s.name === 'ev').enabled === true, 'ev is still enabled');
    });

    await step('a hostile tool description is shown as text and runs nothing', async () => {
      await go(page, 'tools');
      await page.getByLabel('Server').selectOption('hostile');
      await until('the list to show one server', async () => {
        const names = await page.locator('.tool-list .name').allTextContents();
        return names.length === 3 && names.every((n) => n.startsWith('hostile__'));
      });
      await page.getByLabel('Server').selectOption('');
      await page.getByLabel('Search tools').fill('integers');
      await until('the search to find ev__add', async () => {
        const names = await page.locator('.tool-list .name').allTextContents();
        return names.length === 1 && names[0] === 'ev__add';
      });
      await go(page, 'tools/hostile__trap');
      const desc = page.locator('.tool-detail .description');
      await desc.waitFor();
      const text = await desc.textContent();
      check(text.includes('<script>window.__pwned = 1</script>') && text.includes('<img src=x onerror='), `as text: ${text}`);
      // Its zero-width space is pointed out.
      await page.locator('.tool-detail .warning', { hasText: 'its description has 1 invisible character(s)' }).waitFor();
      check(await page.locator('.tool-detail img').count() === 0, 'no <img> element was made');
      check(await page.locator('.tool-detail script').count() === 0, 'no <script> element was made');
      // The form from its schema: an enum, an array, a nested object.
      await page.getByLabel('mode').selectOption({ label: '"a"' });
      await page.getByRole('button', { name: 'Add item to tags' }).click();
      await page.getByLabel('tags[0]').fill('one');
      check(await page.getByLabel('deep').count() === 1, 'the nested object has its field');
      await page.getByRole('button', { name: 'Call', exact: true }).click();
      const out = page.locator('.result pre.text');
      await out.waitFor();
      check((await out.textContent()).includes('<script>'), 'the result is text too');
      check(await page.evaluate(() => window.__pwned) === undefined, 'window.__pwned stays unset');
    });

    await step('a result is rendered by content type', async () => {
      await go(page, 'tools/hostile__media');
      await page.getByRole('button', { name: 'Call', exact: true }).click();
      const result = page.locator('.result');
      await result.locator('pre.text', { hasText: 'every kind of block' }).waitFor();
      const img = result.locator('img');
      check(await img.count() === 1, 'one image shown; the one that is really HTML is not');
      check((await img.getAttribute('src')).startsWith('data:image/png;base64,'), 'the image is a data: URL');
      await until('the image to load', async () => img.evaluate((el) => el.complete && el.naturalWidth === 2));
      await result.getByText('An image of type text/html that cannot be shown.').waitFor();
      check((await result.locator('audio').getAttribute('src')).startsWith('data:audio/wav;base64,'), 'an audio player');
      await result.locator('.resource', { hasText: 'file:///notes.txt' }).getByText('embedded notes').waitFor();
      await result.locator('.resource', { hasText: 'file:///big.csv' }).getByText('a link, not the data').waitFor();
      await result.locator('.structured', { hasText: 'rows: 3' }).waitFor();
      await result.locator('.structured', { hasText: 'ok: true' }).waitFor();
      check(await page.evaluate(() => window.__pwned) === undefined, 'window.__pwned stays unset');
    });

    await step('approval: allow once from the keyboard completes the downstream call', async () => {
      await go(page, 'approvals');
      await visible(page, 'Nothing is waiting for approval');
      await rust({ do: 'call', id: 'c1', tool: 'ev__sleep', args: { ms: 10, token: 's3cret' } });
      const card = page.locator('article.approval', { hasText: 'ev__sleep' });
      await card.waitFor();
      // A secret among the arguments is shown as the log keeps it, and marked.
      await card.locator('.leaf.redacted', { hasText: 'token' }).getByText('redacted').waitFor();
      await card.getByText('replaced by their keyed hash').waitFor();
      check(!(await card.textContent()).includes('s3cret'), 'the secret is not shown');
      await visible(page, 'ui-test-client 1.0');
      await until('the title to count it', async () => (await page.title()).startsWith('(1)'));
      check(await page.locator('#approval-count').textContent() === '1', 'badge 1');
      await until('the countdown', async () => /\d+ s|min/.test(await card.locator('.countdown').textContent()));
      await shot(page, 'approvals', ['Approvals', 'ev__sleep', 'Allow once', 'Deny']);
      await go(phone.page, 'approvals');
      await shot(phone.page, 'approvals', ['ev__sleep', 'Allow once']);
      await go(page, 'approvals');
      await card.waitFor();
      const focused = await until('focus on the first answer', async () => page.evaluate(() => document.activeElement && document.activeElement.textContent));
      check(focused === 'Allow once', `focus is on ${focused}`);
      await page.keyboard.press('Enter');
      const r = await rust({ do: 'await', id: 'c1' });
      check(!r.result.isError && r.result.content[0].text === 'slept 10 ms', JSON.stringify(r));
      await visible(page, 'Nothing is waiting for approval');
    });

    await step('approval: deny gives the downstream client the denial', async () => {
      await rust({ do: 'call', id: 'c2', tool: 'ev__sleep', args: { ms: 11 } });
      const card = page.locator('article.approval', { hasText: 'ev__sleep' });
      await card.getByRole('button', { name: 'Deny' }).click();
      const r = await rust({ do: 'await', id: 'c2' });
      check(r.result.isError && /denied/.test(r.result.content[0].text), JSON.stringify(r));
    });

    await step('an approval warns about a tool whose description hides characters', async () => {
      await rust({ do: 'call', id: 'w1', tool: 'hostile__trap', args: { tags: ['whisper'] } });
      const card = page.locator('article.approval', { hasText: 'hostile__trap' });
      await card.locator('.warning', { hasText: 'its description has 1 invisible character(s)' }).waitFor();
      await card.getByRole('button', { name: 'Deny' }).click();
      const r = await rust({ do: 'await', id: 'w1' });
      check(r.result.isError && /denied/.test(r.result.content[0].text), JSON.stringify(r));
      check(await page.evaluate(() => window.__pwned) === undefined, 'window.__pwned stays unset');
    });

    await step('a result held for review: pass it on, then withhold one', async () => {
      await rust({ do: 'call', id: 'r1', tool: 'ev__countdown', args: { steps: 2 } });
      let card = page.locator('article.approval', { hasText: 'ev__countdown' });
      await card.locator('.pill', { hasText: 'Result to review' }).waitFor();
      await card.getByText('liftoff').first().waitFor();
      await card.getByRole('button', { name: 'Pass it on' }).click();
      let r = await rust({ do: 'await', id: 'r1' });
      check(!r.result.isError && r.result.content[0].text === 'liftoff', JSON.stringify(r));
      await rust({ do: 'call', id: 'r2', tool: 'ev__countdown', args: { steps: 1 } });
      card = page.locator('article.approval', { hasText: 'ev__countdown' });
      await card.getByRole('button', { name: 'Withhold' }).click();
      r = await rust({ do: 'await', id: 'r2' });
      check(r.result.isError && /withheld/.test(r.result.content[0].text), JSON.stringify(r));
    });

    const EDITED = 'a harmless question';
    await step('sampling: the request shown as text, edited, allowed; its completion passed on', async () => {
      await go(page, 'approvals');
      await visible(page, 'Nothing is waiting for approval');
      const hostile = 'the <img src=x onerror="window.__pwned = 2"> plan';
      await rust({ do: 'call', id: 'm1', client: 'sampler', tool: 'ev__summarize', args: { text: hostile } });
      const card = page.locator('article.approval.kind-sampling');
      await card.getByRole('heading', { name: 'Server ev asks your model to answer' }).waitFor();
      await card.locator('.pill', { hasText: 'Sampling request' }).waitFor();
      const first = card.locator('ol.messages > li').first();
      check((await first.locator('.role').textContent()).includes('user'), 'the role is shown');
      const shown = await first.locator('pre.text').textContent();
      check(shown === `Summarize in one line:\n${hostile}`, `the message as text: ${JSON.stringify(shown)}`);
      check(await card.locator('img').count() === 0, 'no <img> element was made from the message');
      check(!(await card.textContent()).includes('null'), 'no empty value is shown as "null"');
      await card.locator('.facts', { hasText: 'Max tokens' }).getByText('100', { exact: true }).waitFor();
      await card.getByText('ui-sampling-client 1.0').waitFor();
      await card.getByText('None.').waitFor(); // no system prompt
      // The editor: each message's text and the system prompt, labelled, from the keyboard.
      await card.getByRole('button', { name: 'Edit…' }).press('Enter');
      const text = card.getByLabel('Message 1 (user) text');
      await until('focus in the editor', async () => text.evaluate((el) => el === document.activeElement));
      check((await text.inputValue()) === `Summarize in one line:\n${hostile}`, 'the editor starts from the request');
      await text.fill(EDITED);
      await card.getByLabel('System prompt').fill('Be brief.');
      await shot(page, 'sampling', ['asks your model to answer', 'Summarize in one line', 'Max tokens', 'Allow once (edited)']);
      await go(phone.page, 'approvals');
      const small = phone.page.locator('article.approval.kind-sampling');
      await small.getByRole('button', { name: 'Edit…' }).click();
      await shot(phone.page, 'sampling', ['asks your model to answer', 'Message 1 (user) text', 'Allow once (edited)']);
      await small.getByLabel('Message 1 (user) text').press('Escape');
      await small.locator('form.sampling-editor').waitFor({ state: 'detached' });
      check(await small.getByRole('button', { name: 'Edit…' }).evaluate((el) => el === document.activeElement && el.getAttribute('aria-expanded') === 'false'),
        'Escape closes the editor, and the focus is back on Edit');
      // The whole request as JSON: what the form holds, checked before it is sent.
      await card.getByRole('button', { name: 'Edit as JSON' }).click();
      const raw = card.getByLabel('The request as JSON');
      const good = await raw.inputValue();
      const parsed = JSON.parse(good);
      check(parsed.messages[0].content.text === EDITED && parsed.systemPrompt === 'Be brief.' && parsed.maxTokens === 100, good);
      await raw.fill('{"messages": [');
      await card.getByRole('button', { name: 'Allow once (edited)' }).click();
      await card.getByRole('alert').filter({ hasText: 'The JSON does not parse' }).waitFor();
      await raw.fill('{"maxTokens": 5}');
      await card.getByRole('button', { name: 'Edit as a form' }).click();
      await card.getByRole('alert').filter({ hasText: '"messages"' }).waitFor();
      check((await api('GET', '/approvals')).json.some((x) => x.kind === 'sampling'), 'nothing was sent meanwhile');
      await raw.fill(good);
      await card.getByRole('button', { name: 'Edit as a form' }).click();
      check((await text.inputValue()) === EDITED, 'the form again, from the JSON');
      await card.getByRole('button', { name: 'Allow once (edited)' }).press('Enter');
      // The completion comes back for review before it goes to the server.
      const done = page.locator('article.approval.kind-completion');
      await done.getByRole('heading', { name: "Your model's answer, going back to server ev" }).waitFor();
      await done.locator('.pill', { hasText: 'Completion to review' }).waitFor();
      const answer = await done.locator('.answer pre.text').textContent();
      check(answer === `saw: ${EDITED}`, `the model saw the edited text: ${JSON.stringify(answer)}`);
      await done.getByText('the completion, before it goes back to server `ev`').waitFor();
      await shot(page, 'completion', ["Your model's answer", `saw: ${EDITED}`, 'Pass it on', 'Withhold']);
      await phone.page.locator('article.approval.kind-completion').waitFor();
      await shot(phone.page, 'completion', ["Your model's answer", 'Pass it on']);
      // From the keyboard: the completion's first answer has the focus the request's card left.
      await until('focus on Pass it on', async () => (await page.evaluate(() => document.activeElement && document.activeElement.textContent)) === 'Pass it on');
      await page.keyboard.press('Enter');
      const r = await rust({ do: 'await', id: 'm1' });
      check(!r.result.isError && r.result.content[0].text === `saw: ${EDITED}`, JSON.stringify(r));
      check(await page.evaluate(() => window.__pwned) === undefined, 'window.__pwned stays unset');
      check(await phone.page.evaluate(() => window.__pwned) === undefined, 'window.__pwned stays unset on the phone');
      await visible(page, 'Nothing is waiting for approval');
    });

    await step('sampling: a withheld completion gives the downstream call an error', async () => {
      await rust({ do: 'call', id: 'm2', client: 'sampler', tool: 'ev__summarize', args: { text: 'second' } });
      const card = page.locator('article.approval.kind-sampling');
      await card.getByRole('button', { name: 'Allow once', exact: true }).click();
      const done = page.locator('article.approval.kind-completion');
      await done.locator('.answer pre.text', { hasText: 'saw: Summarize in one line:\nsecond' }).waitFor();
      await done.getByRole('button', { name: 'Withhold' }).click();
      const r = await rust({ do: 'await', id: 'm2' });
      check(r.result.isError && /withheld/.test(r.result.content[0].text), JSON.stringify(r));
    });

    await step('always allow appears under Policy, explain says so, revoke removes it', async () => {
      await rust({ do: 'call', id: 'c3', tool: 'ev__sleep', args: { ms: 12 } });
      await page.locator('article.approval', { hasText: 'ev__sleep' }).getByRole('button', { name: 'Always allow' }).click();
      const r = await rust({ do: 'await', id: 'c3' });
      check(!r.result.isError, JSON.stringify(r));
      await go(page, 'policy');
      const row = page.locator('tr', { hasText: 'sleep' }).filter({ hasText: 'local' });
      await row.waitFor();
      await page.getByLabel('Tool').selectOption('ev__sleep');
      await page.getByLabel('Arguments (JSON)').fill('{"ms": 5}');
      await page.getByRole('button', { name: 'Explain' }).click();
      await visible(page, 'stored "always allow"');
      await shot(page, 'policy', ['Rules, in order', 'additions', 'Revoke', 'Explain']);
      await go(phone.page, 'policy');
      await shot(phone.page, 'policy', ['Rules, in order', 'Revoke']);
      await row.getByRole('button', { name: /Revoke/ }).click();
      await visible(page, 'None stored');
      const left = await api('GET', '/policy/always');
      check(left.json.length === 0, 'the store is empty');
    });

    const activity = await desk.ctx.newPage();
    activity.setDefaultTimeout(WAIT);
    await step('a call from the Tools form: result rendered, and live in Activity', async () => {
      await go(activity, 'activity');
      await visible(activity, 'No call is in progress');
      await go(page, 'tools/ev__sleep');
      await page.getByLabel('ms', { exact: true }).fill('1500');
      await page.getByRole('button', { name: 'Call', exact: true }).click();
      const running = activity.locator('article.call', { hasText: 'ev__sleep' });
      await running.waitFor();
      await running.locator('.pill', { hasText: 'running' }).waitFor();
      check((await running.textContent()).includes('ui:'), 'the principal is the browser session');
      await page.locator('.result pre.text', { hasText: 'slept 1500 ms' }).waitFor();
      await activity.locator('tbody tr', { hasText: 'ev__sleep' }).filter({ hasText: 'success' }).first().waitFor();
      await visible(activity, 'No call is in progress');
      await go(page, 'tools/ev__add');
      await page.getByLabel('a', { exact: true }).fill('2');
      await page.getByLabel('b', { exact: true }).fill('40');
      await page.getByRole('button', { name: 'Call', exact: true }).click();
      await page.locator('.structured', { hasText: 'sum: 42' }).waitFor();
      await shot(page, 'tools', ['Tools', 'ev__add', 'Adds two integers', 'Try it', 'sum: 42']);
      await go(phone.page, 'tools/ev__add');
      await shot(phone.page, 'tools', ['ev__add', 'Try it']);
      await activity.locator('tbody tr', { hasText: 'ev__add' }).first().waitFor();
    });

    await step('a call in progress shows the upstream\'s progress in Activity', async () => {
      await go(page, 'tools/hostile__slow');
      await page.getByRole('button', { name: 'Call', exact: true }).click();
      const running = activity.locator('article.call', { hasText: 'hostile__slow' });
      await running.locator('.progress', { hasText: /step \d+ of 10/ }).waitFor();
      check(await running.locator('progress').count() === 1, 'a progress bar');
      await until('the elapsed time to count', async () => /^[1-9]\d* s$/.test(await running.locator('.elapsed').textContent()));
      await page.locator('.result pre.text', { hasText: 'slow and done' }).waitFor();
      await visible(activity, 'No call is in progress');
    });

    await step('a running call is cancelled from Activity; the caller is told', async () => {
      await go(page, 'tools/ev__sleep');
      await page.getByLabel('ms', { exact: true }).fill('60000');
      await page.getByRole('button', { name: 'Call', exact: true }).click();
      const running = activity.locator('article.call', { hasText: 'ev__sleep' });
      await running.locator('.pill', { hasText: 'running' }).waitFor();
      await activity.locator('.chain.ok').waitFor();
      await shot(activity, 'activity', ['Activity', 'In progress', 'ev__sleep', 'Cancel', 'Chain: intact']);
      await go(phone.page, 'activity');
      await shot(phone.page, 'activity', ['In progress', 'Cancel']);
      await running.getByRole('button', { name: 'Cancel' }).click();
      await page.locator('.result.is-error', { hasText: 'cancelled' }).waitFor();
      await visible(activity, 'No call is in progress');
    });

    await step('the log: filters, a record in detail, verify', async () => {
      await activity.getByLabel('Tool').fill('ev__add');
      await activity.getByRole('button', { name: 'Apply' }).click();
      await until('only ev__add rows', async () => {
        const rows = await activity.locator('tbody tr').allTextContents();
        return rows.length > 0 && rows.every((t) => t.includes('ev__add'));
      });
      await activity.locator('tbody tr').first().getByRole('button', { name: /Details/ }).click();
      await activity.locator('.record-detail', { hasText: 'Arguments' }).waitFor();
      await visible(activity, 'additions');
      await activity.getByRole('button', { name: 'Verify the chain' }).click();
      await activity.locator('.chain.ok').waitFor();
    });

    await step('raw JSON arguments; a secret among them is redacted in the log and marked', async () => {
      await go(page, 'tools/hostile__trap');
      await page.getByRole('button', { name: 'Edit as JSON' }).click();
      await page.getByLabel('Arguments as JSON').fill('{"mode": "b", "password": "hunter2"}');
      await page.getByRole('button', { name: 'Call', exact: true }).click();
      await page.locator('.result pre.text').waitFor();
      await activity.getByLabel('Tool').fill('hostile__trap');
      await activity.getByRole('button', { name: 'Apply' }).click();
      await until('the call in the log', async () => (await activity.locator('tbody tr').count()) >= 2);
      await activity.locator('tbody tr').first().getByRole('button', { name: /Details/ }).click();
      const detail = activity.locator('.record-detail');
      await detail.locator('.leaf.redacted', { hasText: 'password' }).first().getByText('redacted').waitFor();
      check(!(await detail.textContent()).includes('hunter2'), 'the secret is not shown');
      await detail.locator('.leaf', { hasText: 'mode' }).first().getByText('"b"').waitFor();
    });

    await step('a tool switched off leaves the downstream client\'s list, and comes back', async () => {
      await go(page, 'tools/ev__add');
      await page.getByLabel('Offered to clients').uncheck();
      await visible(page, 'Hidden from clients');
      let r = await until('ev__add to leave the list', async () => {
        const t = await rust({ do: 'tools' });
        return !t.tools.includes('ev__add') && t;
      });
      check(r.tools.includes('ev__sleep'), 'the others stay');
      await page.getByLabel('Offered to clients').check();
      r = await until('ev__add to come back', async () => {
        const t = await rust({ do: 'tools' });
        return t.tools.includes('ev__add') && t;
      });
    });

    await step('a tool switched off for one client session only', async () => {
      const sessions = (await api('GET', '/sessions')).json;
      const mine = sessions.find((x) => x.client === 'ui-session-client 1.0');
      check(mine, `the handshake-era client is listed: ${JSON.stringify(sessions)}`);
      await go(page, 'tools/ev__add');
      await page.getByLabel('Client session', { exact: true }).selectOption(String(mine.id));
      await page.getByRole('button', { name: 'Switch off for this session' }).click();
      await page.getByRole('button', { name: `Switch on for session ${mine.id}` }).waitFor();
      await until('ev__add to leave that session\'s list', async () => !(await rust({ do: 'tools', client: 'session' })).tools.includes('ev__add'));
      check((await rust({ do: 'tools' })).tools.includes('ev__add'), 'the stateless client still has it');
      await rust({ do: 'call', id: 's1', client: 'session', tool: 'ev__add', args: { a: 1, b: 1 } });
      const r = await rust({ do: 'await', id: 's1' });
      check(r.result.isError && /switched off/.test(r.result.content[0].text), JSON.stringify(r));
      await page.getByRole('button', { name: `Switch on for session ${mine.id}` }).click();
      await until('ev__add to come back', async () => (await rust({ do: 'tools', client: 'session' })).tools.includes('ev__add'));
    });

    await step('a server disabled and enabled again from Servers', async () => {
      await go(page, 'servers');
      const card = page.locator('article[aria-label="Server hostile"]');
      await card.getByRole('button', { name: 'Disable' }).click();
      await card.locator('.pill', { hasText: 'stopped' }).waitFor();
      await until('its tool to leave', async () => !(await api('GET', '/tools')).json.some((t) => t.server === 'hostile'));
      await card.getByRole('button', { name: 'Enable' }).click();
      await card.locator('.pill', { hasText: 'ready' }).waitFor({ timeout: 60000 });
      await until('its tool to come back', async () => (await api('GET', '/tools')).json.some((t) => t.name === 'hostile__trap'));
    });

    await step('disconnected: the header says so, and the live parts come back', async () => {
      await go(page, 'servers');
      await page.locator('#conn', { hasText: 'Live' }).waitFor();
      await desk.ctx.setOffline(true);
      await page.locator('#conn', { hasText: 'Disconnected' }).waitFor();
      await desk.ctx.setOffline(false);
      await page.locator('#conn', { hasText: 'Live' }).waitFor({ timeout: 30000 });
      await page.locator('article[aria-label="Server ev"] .pill', { hasText: 'ready' }).waitFor();
    });

    await step('an upstream killed: Servers shows it restarting, then ready', async () => {
      await go(page, 'servers');
      const s = await api('GET', '/servers');
      const ev = s.json.find((x) => x.name === 'ev');
      check(ev.pid > 0, 'ev has a process');
      process.kill(ev.pid, 'SIGKILL');
      const pill = page.locator('article[aria-label="Server ev"] .pill');
      await until('restarting', async () => /restarting|starting/.test(await pill.textContent()));
      await until('ready again', async () => (await pill.textContent()) === 'ready', 60000);
      const after = await api('GET', '/servers');
      check(after.json.find((x) => x.name === 'ev').restarts >= 1, 'the restart is counted');
    });

    check(errors.length === 0, `no script errors on the page: ${errors.join('; ')}`);
  } catch (e) {
    // What each page showed when it failed, for the person reading the failure.
    for (const [i, ctx] of browser.contexts().entries()) {
      for (const [j, p] of ctx.pages().entries()) {
        await p.screenshot({ path: path.join(SHOTS, `failure-${i}-${j}.png`), fullPage: true }).catch(() => {});
      }
    }
    throw e;
  } finally {
    await browser.close();
  }
  return passed;
}

main().then(
  (n) => {
    console.error(`ui_test: ${n} passed, 0 failed`);
    process.stdout.write(`@@ ${JSON.stringify({ do: 'done', passed: n })}\n`);
    process.exit(0);
  },
  (e) => {
    console.error(`ui_test: FAILED: ${e.stack || e}`);
    process.stdout.write(`@@ ${JSON.stringify({ do: 'failed', passed, error: String(e.message || e) })}\n`);
    process.exit(1);
  },
);
