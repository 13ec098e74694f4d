#!/usr/bin/python3
"""jobs-slowdowns.py DIR CSV PNG TITLE: gathers runs of one jobs mix over
placements (DIR/ALGORITHM-SEED.csv, scripts/figures/jobs-fattree.sh's)
into one CSV, a row per job, and draws each algorithm's distribution of
the jobs' slowdowns against running alone (a box per algorithm, every job
a dot) and of their times together. Prints each algorithm's median, mean
and worst slowdown. Exits 1 if any row has wrong elements."""
import csv, glob, os, statistics, sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

src, out_csv, out_png, title = sys.argv[1:5]
rows = []
for path in sorted(glob.glob(os.path.join(src, "*.csv"))):
    algorithm, seed = os.path.basename(path)[:-4].rsplit("-", 1)
    for r in csv.DictReader(open(path)):
        rows.append({"algorithm": algorithm, "placement_seed": int(seed), "job": r["job"],
                     "size_bytes": r["size_bytes"], "time_us": r["time_us"], "alone_us": r["alone_us"],
                     "slowdown": r["slowdown"], "wrong": r["wrong"]})
if not rows:
    sys.exit("jobs-slowdowns: no runs in %s" % src)
rows.sort(key=lambda r: (r["algorithm"], r["placement_seed"], r["job"]))
with open(out_csv, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
print("wrote %s (%d rows)" % (out_csv, len(rows)))

algorithms = [a for a in ("ring", "push", "pull") if any(r["algorithm"] == a for r in rows)]
fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
for ax, metric, label in ((axes[0], "slowdown", "slowdown against alone (x)"),
                          (axes[1], "time_us", "time together (us)")):
    data = [[float(r[metric]) for r in rows if r["algorithm"] == a] for a in algorithms]
    ax.boxplot(data, labels=algorithms, whis=(0, 100))
    for i, d in enumerate(data, 1):
        ax.scatter([i + 0.25] * len(d), d, s=6, alpha=0.4)
    ax.set_ylabel(label)
    ax.grid(alpha=0.3, axis="y")
    if metric == "time_us":
        ax.set_ylim(bottom=0)
axes[0].axhline(1, color="gray", linestyle=":")
fig.suptitle(title, fontsize=10)
fig.tight_layout()
fig.savefig(out_png, dpi=120)
print("wrote %s" % out_png)
for a in algorithms:
    s = [float(r["slowdown"]) for r in rows if r["algorithm"] == a]
    t = [float(r["time_us"]) for r in rows if r["algorithm"] == a]
    print("%-5s %d jobs: slowdown median %.3f, mean %.3f, worst %.3f; time together median %.2f us"
          % (a, len(s), statistics.median(s), statistics.mean(s), max(s), statistics.median(t)))
bad = [r for r in rows if r["wrong"] not in ("0", 0)]
for r in bad:
    print("WRONG: %s seed %d job %s: %s" % (r["algorithm"], r["placement_seed"], r["job"], r["wrong"]))
sys.exit(1 if bad else 0)
