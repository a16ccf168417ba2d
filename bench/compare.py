#!/usr/bin/env python3
"""Runs bench-driver against Portico and rmcp, interleaved, and prints medians side by side.

Called by bench/compare.sh (which builds both first); see there for the options.
"""
import argparse
import json
import statistics
import subprocess
import sys

p = argparse.ArgumentParser()
p.add_argument("--bin", required=True)
p.add_argument("--rbin", required=True)
p.add_argument("--era", default="handshake")
p.add_argument("--rmcp", default="stdio,stdio-pipes")
p.add_argument("--transport", default="all", choices=["all", "stdio", "http"])
p.add_argument("--rounds", type=int, default=1)
p.add_argument("--pin", action="store_true",
               help="the driver on CPU 0 and the server on CPU 1 (taskset), as a container limited to one core")
p.add_argument("--threads", action="store_true",
               help="HTTP: also Portico on a connection thread per CPU, and its hyper echo")
p.add_argument("driver_args", nargs="*")
a = p.parse_args()
B, R = a.bin, a.rbin

# section → (title, [(name, era, mode, command, workloads or None)])
sections = []
if a.transport in ("all", "stdio"):
    cfgs = [("Portico", a.era, "stdio", [f"{B}/bench-server", "stdio"], None)]
    for m in a.rmcp.split(","):
        cfgs.append((f"rmcp {m}", a.era, "stdio", [f"{R}/rmcp-bench-server", m], None))
    sections.append((f"stdio, {a.era} era", cfgs))
if a.transport in ("all", "http"):
    # With --threads, two more rows: the same server with a connection thread per CPU
    # (`bench-server http-threads`) and that serving's own floor (`http-echo --threads`).
    echo = ("hyper echo", "bare", "http", [f"{B}/http-echo", "{port}"], "http1,http16,http64")
    for era, title, rmcp_mode in [("handshake", "HTTP, handshake era (one session per connection)", "http"),
                                  ("stateless", "HTTP, stateless era (2026-07-28)", "http-stateless")]:
        rows = [
            ("Portico", era, "http", [f"{B}/bench-server", "http", "{port}"], None),
            ("rmcp", era, "http", [f"{R}/rmcp-bench-server", rmcp_mode, "{port}"], None),
        ]
        if a.threads:
            rows.append(("Portico, threads", era, "http", [f"{B}/bench-server", "http-threads", "{port}"], None))
        rows.append(echo)
        if a.threads:
            rows.append(("hyper echo, threads", "bare", "http", [*echo[3], "--threads"], echo[4]))
        sections.append((title, rows))

runs = {}  # (section index, name) → [doc per round]
status = 0
for r in range(a.rounds):
    for si, (title, cfgs) in enumerate(sections):
        for name, era, mode, cmd, workloads in cfgs:
            args = [f"{B}/bench-driver", *a.driver_args, "--era", era, "--json"]
            if workloads:
                args += ["--workloads", workloads]
            args += [mode, "--", *(["taskset", "-c", "1"] if a.pin else []), *cmd]
            if a.pin:
                args = ["taskset", "-c", "0", *args]
            print(f"-- round {r + 1}: {title}: {name}", file=sys.stderr)
            res = subprocess.run(args, stdout=subprocess.PIPE, text=True)
            if res.returncode != 0:
                status = 1
            try:
                doc = json.loads(res.stdout)
            except json.JSONDecodeError:
                print(f"{name}: no JSON from the driver (exit {res.returncode})", file=sys.stderr)
                status = 1
                continue
            runs.setdefault((si, name), []).append(doc)


def figs(si, name, w):
    return [f for d in runs.get((si, name), []) for f in d["figures"] if f["workload"] == w]


def med(fs, key):
    if not fs or any(f["void"] for f in fs):
        return None
    vals = [f[key] for f in fs if f.get(key) is not None]
    return statistics.median(vals) if vals else None


def spread(fs, key):
    vals = [f[key] for f in fs if not f["void"] and f.get(key) is not None]
    return f" ({min(vals):,.0f}–{max(vals):,.0f})" if len(vals) > 1 else ""


def void(fs):
    return next((f["void"] for f in fs if f["void"]), None)


for si, (title, cfgs) in enumerate(sections):
    names = [c[0] for c in cfgs]
    others = names[1:]
    print(f"\n### {title}\n")
    head = ["workload", "Portico"]
    for n in others:
        head += [n, f"Portico ÷ {n}"]
    head += ["Portico CPU µs/call"] + [f"{n} CPU µs/call" for n in others]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    workloads = [f["workload"] for f in runs.get((si, "Portico"), [{"figures": []}])[0]["figures"]]
    for w in workloads:
        mine = figs(si, "Portico", w)
        if w == "sessions":
            key, unit = "kb_per_session", " KB/session"
        else:
            key, unit = "calls_per_s", ""
        row = [w]
        pv = med(mine, key)
        row.append("VOID" if void(mine) else (f"{pv:,.1f}{unit}" if unit else f"{pv:,.0f}{spread(mine, key)}"))
        for n in others:
            theirs = figs(si, n, w)
            tv = med(theirs, key)
            if not theirs:
                row += ["–", "–"]
                continue
            if void(theirs):
                row += ["VOID", "–"]
                continue
            row.append(f"{tv:,.1f}{unit}" if unit else f"{tv:,.0f}{spread(theirs, key)}")
            if pv is None or tv is None or not tv or not pv:
                row.append("–")
            elif unit:
                row.append(f"{tv / pv:.1f}× less")
            else:
                row.append(f"{pv / tv:.2f}×")
        cpu = lambda fs: "–" if med(fs, "server_cpu_us_per_call") is None else f"{med(fs, 'server_cpu_us_per_call'):,.1f}"
        row += [cpu(mine)] + [cpu(figs(si, n, w)) for n in others]
        print("| " + " | ".join(row) + " |")
    # Tails: p99 (and p99.9, noisier) of each workload, medians of the rounds, in µs.
    tails = [n for n in names if not n.startswith("hyper echo")] + [n for n in names if n.startswith("hyper echo")]
    print(f"\n{title}: tails, µs (median of rounds) — p99 / p99.9\n")
    print("| workload | " + " | ".join(tails) + " | Portico p99 ÷ " + " | Portico p99 ÷ ".join(others) + " |")
    print("|---|" + "---:|" * (len(tails) + len(others)))
    for w in workloads:
        if w == "sessions":
            continue
        cells, p99s = [w], {}
        for n in tails:
            fs = figs(si, n, w)
            p99, p999 = med(fs, "p99_us"), med(fs, "p999_us")
            p99s[n] = p99
            cells.append("–" if p99 is None else f"{p99:,.0f} / {p999:,.0f}" if p999 is not None else f"{p99:,.0f}")
        for n in others:
            mine, theirs = p99s.get("Portico"), p99s.get(n)
            cells.append(f"{mine / theirs:.2f}" if mine and theirs else "–")
        print("| " + " | ".join(cells) + " |")
    for n in names:
        notes = sorted({f"{f['workload']}: {f['void'] or f['note']}" for d in runs.get((si, n), []) for f in d["figures"]
                        if f["void"] or (f["note"] and f["workload"] in ("hol", "sessions"))})
        if notes:
            print(f"\n{n}: " + "; ".join(notes))

print(f"\nmedian of {a.rounds} interleaved round(s) (min–max in brackets); ratio = Portico calls/s ÷ the other's; "
      + ("HTTP threads = a connection thread per CPU (bench-server http-threads, http-echo --threads); " if a.threads else "")
      + "CPU = server user+system time per call; "
      + ("pinned: driver on CPU 0, server on CPU 1" if a.pin else "unpinned"))
sys.exit(status)
