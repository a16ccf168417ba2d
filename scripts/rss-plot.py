#!/usr/bin/env python3
"""Plots the RSS curve of a soak run: reads the `SOAK gateway: RSS over time: 5s 77 MiB, …` line
that `scripts/soak.sh` (crates/portico-host/tests/soak.rs) prints, writes a PNG.

    python3 scripts/rss-plot.py soak.log docs/img/soak-rss.png [TITLE]

Needs matplotlib (`pip install matplotlib`); not used by CI.
"""
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    log, out = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else "portico gateway soak: RSS of the host process"
    line = next((l for l in open(log, errors="replace") if "RSS over time:" in l), None)
    if line is None:
        sys.exit(f"{log}: no 'RSS over time' line")
    points = [(int(t), int(m)) for t, m in re.findall(r"(\d+)s (\d+) MiB", line.split("RSS over time:", 1)[1])]
    if not points:
        sys.exit(f"{log}: no samples")
    xs = [t / 60 for t, _ in points]
    ys = [m for _, m in points]
    fig, ax = plt.subplots(figsize=(8, 3.5), dpi=100)
    ax.plot(xs, ys, marker=".", linewidth=1)
    ax.set_xlabel("minutes")
    ax.set_ylabel("RSS (MiB)")
    ax.set_ylim(0, max(ys) * 1.25)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out)
    print(f"{out}: {len(points)} samples, {min(ys)}–{max(ys)} MiB")


if __name__ == "__main__":
    main()
