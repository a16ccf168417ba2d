// A downstream client written with the official TypeScript SDK (@modelcontextprotocol/sdk),
// driven by a JSON plan. Used by crates/portico-cli/tests/interop.rs, which asserts on what it
// prints.
//
//     node ts_client.mjs SDK_PREFIX PLAN_JSON
//
// SDK_PREFIX is the npm prefix the SDK is installed under (.ci-cache/ts). PLAN_JSON:
//     {"target": {"stdio": {"command": "...", "args": ["..."]}} | {"http": "http://127.0.0.1:PORT/mcp"},
//      "calls": [{"tool": "NAME", "args": {...}}, ...],
//      "reads": ["URI", ...],
//      "prompts": [{"name": "NAME", "args": {...}}, ...]}
//
// Prints one JSON object on stdout; each failed step is recorded with its error instead of
// stopping the run. Exits 0 unless connecting itself failed.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";

// Every step together must finish within this; the Rust test also bounds the process.
const DEADLINE_MS = 90_000;

const [prefix, planText] = process.argv.slice(2);
const require = createRequire(join(resolve(prefix), "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
// (The package's exports map `./package.json` to dist/cjs's, which has no version.)
const sdkVersion = JSON.parse(
  readFileSync(join(resolve(prefix), "node_modules/@modelcontextprotocol/sdk/package.json"), "utf8"),
).version;

const plan = JSON.parse(planText);
const timer = setTimeout(() => {
  console.error(`ts_client: no result within ${DEADLINE_MS} ms`);
  process.exit(3);
}, DEADLINE_MS);

const textOf = (blocks) => (blocks ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
const errorText = (e) => `${e?.name ?? "Error"}: ${e?.message ?? e}`;

async function allPages(fetch, key) {
  const items = [];
  let cursor;
  for (let i = 0; i < 100; i++) {
    const page = await fetch(cursor ? { cursor } : undefined);
    items.push(...page[key]);
    cursor = page.nextCursor;
    if (!cursor) break;
  }
  return items;
}

async function main() {
  const transport = plan.target.stdio
    ? new StdioClientTransport({
        command: plan.target.stdio.command,
        args: plan.target.stdio.args ?? [],
        stderr: "inherit",
      })
    : new StreamableHTTPClientTransport(new URL(plan.target.http));
  // The client tells an HTTP transport the negotiated version; stdio has no such hook, so
  // one is added to learn it on both.
  let negotiated = null;
  const setVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    negotiated = v;
    setVersion?.(v);
  };

  const client = new Client({ name: "portico-interop-ts", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  const report = { sdk: "typescript", sdkVersion, protocolVersion: negotiated };
  const info = client.getServerVersion();
  report.serverInfo = info ? { name: info.name, version: info.version } : null;
  report.capabilities = client.getServerCapabilities() ?? null;

  const tools = await allPages((p) => client.listTools(p), "tools");
  report.tools = tools.map((t) => ({
    name: t.name,
    upstream: t._meta?.["dev.portico/upstream"] ?? null,
    description: t.description ?? null,
  }));
  report.resources = (await allPages((p) => client.listResources(p), "resources")).map((r) => r.uri);
  report.templates = (await allPages((p) => client.listResourceTemplates(p), "resourceTemplates")).map(
    (t) => t.uriTemplate,
  );
  report.prompts = (await allPages((p) => client.listPrompts(p), "prompts")).map((p) => p.name);

  report.calls = [];
  for (const call of plan.calls ?? []) {
    const entry = { tool: call.tool };
    try {
      const r = await client.callTool({ name: call.tool, arguments: call.args ?? {} });
      Object.assign(entry, {
        isError: !!r.isError,
        text: textOf(r.content),
        structured: r.structuredContent ?? null,
        meta: r._meta ?? null,
      });
    } catch (e) {
      entry.error = errorText(e);
    }
    report.calls.push(entry);
  }

  report.reads = [];
  for (const uri of plan.reads ?? []) {
    const entry = { uri };
    try {
      const r = await client.readResource({ uri });
      entry.contents = r.contents.map((c) => ({ uri: c.uri, text: c.text ?? null, blob: c.blob !== undefined }));
    } catch (e) {
      entry.error = errorText(e);
    }
    report.reads.push(entry);
  }

  report.prompts_got = [];
  for (const prompt of plan.prompts ?? []) {
    const entry = { name: prompt.name };
    try {
      const r = await client.getPrompt({ name: prompt.name, arguments: prompt.args ?? {} });
      entry.text = r.messages
        .filter((m) => m.content?.type === "text")
        .map((m) => m.content.text)
        .join("\n");
    } catch (e) {
      entry.error = errorText(e);
    }
    report.prompts_got.push(entry);
  }

  if (!plan.target.stdio) {
    // Ends the HTTP session (DELETE) as a well-behaved client does.
    try {
      await transport.terminateSession();
      report.terminated = true;
    } catch (e) {
      report.terminated = errorText(e);
    }
  }
  await client.close();
  return report;
}

main().then(
  (report) => {
    clearTimeout(timer);
    process.stdout.write(JSON.stringify(report) + "\n", () => process.exit(0));
  },
  (e) => {
    console.error("ts_client:", e?.stack ?? e);
    process.exit(1);
  },
);
