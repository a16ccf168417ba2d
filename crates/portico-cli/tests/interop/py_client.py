"""A downstream client written with the official Python SDK (mcp 2.x), driven by a JSON plan.
Used by crates/portico-cli/tests/interop.rs, which asserts on what it prints.

    python py_client.py PLAN_JSON

PLAN_JSON:
    {"target": {"stdio": {"command": "...", "args": ["..."]}} | {"http": "http://127.0.0.1:PORT/mcp"},
     "mode": "auto" | "legacy",        # auto: server/discover, falling back to initialize
     "calls": [{"tool": "NAME", "args": {...}}, ...],
     "reads": ["URI", ...],
     "prompts": [{"name": "NAME", "args": {...}}, ...],
     "decisions": ["allow_once", ...],  # optional: answers to Portico's approval forms, in order
     "answers": [{...}, ...]}           # optional: form contents to answer with first, in order

With "decisions" or "answers", the client declares elicitation and answers each form it is shown
with the next answer as it is, then with the next decision (`{"decision": ...}`), recording the
form's message under "asked".

Prints one JSON object on stdout (see `report` below); each failed step is recorded with its
error instead of stopping the run. Exits 0 unless connecting itself failed.
"""

import json
import sys
import traceback

import anyio
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters

# Every step together must finish within this; the Rust test also bounds the process.
DEADLINE_SECONDS = 90


def text_of(blocks) -> str:
    return "\n".join(b.text for b in blocks if getattr(b, "type", None) == "text")


def error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


async def all_pages(fetch, attr):
    items, cursor = [], None
    for _ in range(100):
        page = await fetch(cursor=cursor) if cursor else await fetch()
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


async def run(plan: dict) -> dict:
    target = plan["target"]
    if "stdio" in target:
        server = StdioServerParameters(command=target["stdio"]["command"], args=target["stdio"].get("args", []))
    else:
        server = target["http"]
    report: dict = {"sdk": "python", "asked": []}
    decisions = list(plan.get("decisions", []))
    answers = list(plan.get("answers", []))

    async def answer_form(context, params):
        report["asked"].append(params.message)
        if answers:
            return types.ElicitResult(action="accept", content=answers.pop(0))
        if not decisions:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": decisions.pop(0)})

    extra = {"elicitation_callback": answer_form} if "decisions" in plan or "answers" in plan else {}
    async with Client(server, mode=plan.get("mode", "auto"), cache=None, **extra) as client:
        report["protocolVersion"] = client.protocol_version
        info = client.server_info
        report["serverInfo"] = {"name": info.name, "version": info.version} if info else None
        caps = client.server_capabilities
        report["capabilities"] = caps.model_dump(by_alias=True, mode="json", exclude_none=True) if caps else None

        tools = await all_pages(client.list_tools, "tools")
        report["tools"] = [
            {"name": t.name, "upstream": (t.meta or {}).get("dev.portico/upstream"), "description": t.description}
            for t in tools
        ]
        resources = await all_pages(client.list_resources, "resources")
        report["resources"] = [str(r.uri) for r in resources]
        templates = await all_pages(client.list_resource_templates, "resource_templates")
        report["templates"] = [str(t.uri_template) for t in templates]
        prompts = await all_pages(client.list_prompts, "prompts")
        report["prompts"] = [p.name for p in prompts]

        report["calls"] = []
        for call in plan.get("calls", []):
            entry = {"tool": call["tool"]}
            try:
                r = await client.call_tool(call["tool"], call.get("args", {}))
                entry.update(
                    isError=bool(r.is_error), text=text_of(r.content), structured=r.structured_content, meta=r.meta
                )
            except Exception as e:  # recorded, asserted on by the test
                entry["error"] = error_text(e)
            report["calls"].append(entry)

        report["reads"] = []
        for uri in plan.get("reads", []):
            entry = {"uri": uri}
            try:
                r = await client.read_resource(uri)
                entry["contents"] = [
                    {"uri": str(c.uri), "text": getattr(c, "text", None), "blob": getattr(c, "blob", None) is not None}
                    for c in r.contents
                ]
            except Exception as e:
                entry["error"] = error_text(e)
            report["reads"].append(entry)

        report["prompts_got"] = []
        for prompt in plan.get("prompts", []):
            entry = {"name": prompt["name"]}
            try:
                r = await client.get_prompt(prompt["name"], prompt.get("args", {}))
                entry["text"] = "\n".join(
                    m.content.text for m in r.messages if getattr(m.content, "type", None) == "text"
                )
            except Exception as e:
                entry["error"] = error_text(e)
            report["prompts_got"].append(entry)
    return report


async def main() -> None:
    plan = json.loads(sys.argv[1])
    with anyio.fail_after(DEADLINE_SECONDS):
        report = await run(plan)
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    try:
        anyio.run(main)
    except BaseException:
        traceback.print_exc()
        sys.exit(1)
