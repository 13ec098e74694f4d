#!/usr/bin/python3
"""jobs-figure.py DIR CSV PNG [TITLE XLABEL]: gathers a jobs figure's runs
(ALGORITHM-N-POLICY-BYTES.csv, ring-N.csv and their printed tables:
scripts/figures/jobs-dgx2.sh's push runs, jobs-cluster.sh's nvlssharp runs)
into one CSV, a row per job, and plots against table size, a panel per job
count, each policy's mean slowdown over the jobs that ran the in-network
algorithm (top) and mean time together over all the run's jobs, those that
fell back to the ring included (bottom); the ring jobs' as a dashed line.
TITLE may name {n}, the job count, and {gpus}, GPUs per job on DGX-2."""
import csv, glob, os, re, sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

src, out_csv, out_png = sys.argv[1:4]
title = sys.argv[4] if len(sys.argv) > 4 else "DGX-2, {n} jobs of {gpus} GPUs (spread), 1 MiB"
xlabel = sys.argv[5] if len(sys.argv) > 5 else "reduction table per switch port (B)"
rows = []
for path in sorted(glob.glob(os.path.join(src, "*.csv"))):
    name = os.path.basename(path)[:-4]
    parts = name.split("-")
    algorithm, n = parts[0], int(parts[1])
    policy, table = (parts[2], int(parts[3])) if algorithm != "ring" else ("-", 0)
    # The printed table says which jobs fell back to the ring.
    text = open(path[:-4] + ".txt").read()
    fell = set(re.findall(r"^# job (\S+):.*\n#   fallback: software", text, re.M))
    for r in csv.DictReader(open(path)):
        rows.append({"jobs": n, "algorithm": algorithm, "policy": policy, "table_bytes": table, "job": r["job"],
                     "ran": "ring (fallback)" if r["job"] in fell else algorithm, "time_us": r["time_us"],
                     "alone_us": r["alone_us"], "slowdown": r["slowdown"], "wrong": r["wrong"]})
        # A cluster's runs that set ib.sharp.policy: the job's share of SHARP's tables and its waits for an entry.
        if r.get("sharp_sharing.entries"):
            rows[-1].update(sharp_entries=r["sharp_sharing.entries"], sharp_stalls=r["sharp_sharing.stalls"])
fields = list(dict.fromkeys(k for r in rows for k in r))
with open(out_csv, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields, restval="")
    w.writeheader()
    w.writerows(rows)

counts = sorted({r["jobs"] for r in rows})
innet = next(r["algorithm"] for r in rows if r["algorithm"] != "ring")
policies = [p for p in ("shared", "partitioned", "weighted", "quota") if any(r["policy"] == p for r in rows)]
markers = dict(zip(("shared", "partitioned", "weighted", "quota"), "os^v"))
mean = lambda xs: sum(xs) / len(xs)
# Top: the slowdown against alone; bottom: the time in the mix, where the
# ring's (software) shows what reducing in the switches still gains.
fig, axes = plt.subplots(2, len(counts), figsize=(max(5 * len(counts), 7), 7), sharex=True, squeeze=False)
for col, n in enumerate(counts):
    for row, metric in enumerate(("slowdown", "time_us")):
        ax = axes[row][col]
        for policy in policies:
            pts = {}
            for r in rows:
                if r["jobs"] == n and r["policy"] == policy and (r["ran"] == innet or metric == "time_us"):
                    pts.setdefault(r["table_bytes"], []).append(float(r[metric]))
            xs = sorted(pts)
            ax.plot(xs, [mean(pts[x]) for x in xs], marker=markers[policy], label=f"{innet}, {policy}")
        ring = [float(r[metric]) for r in rows if r["jobs"] == n and r["algorithm"] == "ring"]
        ax.axhline(mean(ring), color="gray", linestyle="--", label="ring jobs (software)")
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        if row == 0:
            ax.set_title(title.format(n=n, gpus=16 // n))
        else:
            ax.set_xlabel(xlabel)
            ax.set_ylim(bottom=0)
axes[0][0].set_ylabel(f"mean slowdown against alone (x), {innet} jobs")
axes[1][0].set_ylabel("mean time together (us), ring fallbacks included")
axes[0][0].legend(fontsize=8)
fig.tight_layout()
fig.savefig(out_png, dpi=120)
