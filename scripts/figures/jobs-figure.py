#!/usr/bin/python3
"""jobs-figure.py DIR CSV PNG: gathers scripts/figures/jobs-dgx2.sh's runs
(push-N-POLICY-BYTES.csv, ring-N.csv and their printed tables) into one CSV,
a row per job, and plots each policy's mean slowdown against table size, a
panel per job count, the ring jobs' as a dashed line."""
import csv, glob, os, re, sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

src, out_csv, out_png = sys.argv[1:4]
rows = []
for path in sorted(glob.glob(os.path.join(src, "*.csv"))):
    name = os.path.basename(path)[:-4]
    parts = name.split("-")
    algorithm, n = parts[0], int(parts[1])
    policy, table = (parts[2], int(parts[3])) if algorithm == "push" else ("-", 0)
    # The printed table says which jobs fell back to the ring.
    text = open(path[:-4] + ".txt").read()
    fell = set(re.findall(r"^# job (\S+):.*\n#   fallback: software", text, re.M))
    for r in csv.DictReader(open(path)):
        rows.append({"jobs": n, "algorithm": algorithm, "policy": policy, "table_bytes": table, "job": r["job"],
                     "ran": "ring (fallback)" if r["job"] in fell else algorithm, "time_us": r["time_us"],
                     "alone_us": r["alone_us"], "slowdown": r["slowdown"], "wrong": r["wrong"]})
with open(out_csv, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)

counts = sorted({r["jobs"] for r in rows})
mean = lambda xs: sum(xs) / len(xs)
# Top: the slowdown against alone; bottom: the time in the mix, where the
# ring's (software) shows what reducing in the switches still gains.
fig, axes = plt.subplots(2, len(counts), figsize=(5 * len(counts), 7), sharex=True)
for col, n in enumerate(counts):
    for row, metric in enumerate(("slowdown", "time_us")):
        ax = axes[row][col]
        for policy, marker in (("shared", "o"), ("partitioned", "s"), ("quota", "^")):
            pts = {}
            for r in rows:
                if r["jobs"] == n and r["policy"] == policy and r["ran"] == "push":
                    pts.setdefault(r["table_bytes"], []).append(float(r[metric]))
            xs = sorted(pts)
            ax.plot(xs, [mean(pts[x]) for x in xs], marker=marker, label=f"push, {policy}")
        ring = [float(r[metric]) for r in rows if r["jobs"] == n and r["algorithm"] == "ring"]
        ax.axhline(mean(ring), color="gray", linestyle="--", label="ring jobs (software)")
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        if row == 0:
            ax.set_title(f"DGX-2, {n} jobs of {16 // n} GPUs (spread), 1 MiB")
        else:
            ax.set_xlabel("reduction table per switch port (B)")
            ax.set_ylim(bottom=0)
axes[0][0].set_ylabel("mean slowdown against alone (x)")
axes[1][0].set_ylabel("mean time together (us)")
axes[0][0].legend(fontsize=8)
fig.tight_layout()
fig.savefig(out_png, dpi=120)
