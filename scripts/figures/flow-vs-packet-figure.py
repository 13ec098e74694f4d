#!/usr/bin/python3
"""flow-vs-packet-figure.py: every point of docs/figures/flow-vs-packet.csv
(the collectives: flow's error against packet level by message size, a
line per case) and of flow-vs-packet-train.csv (training: the iteration's
error and the collectives' summed time's, each run alone and on one shared
network (flow.share_links), four bars per case, with the share of the
first's time that ran beside another group's collective), with
the 5% band the cross-check aims for; writes
docs/figures/flow-vs-packet.png. flow-vs-packet.sh runs it."""
import csv, os, sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

figures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "figures")
points = list(csv.DictReader(open(os.path.join(figures, "flow-vs-packet.csv"))))
train = list(csv.DictReader(open(os.path.join(figures, "flow-vs-packet-train.csv"))))
if not points:
    sys.exit("flow-vs-packet-figure: no rows in flow-vs-packet.csv")


# The NICs' schedule tables, clusters (InfiniBand and RoCE), and the GPU fabrics' cores.
def family(case):
    if any(k in case for k in ("multitree", "dbtree", "ring2d", "torus-hd", "blink")):
        return "NICs' schedule tables"
    return "clusters" if case.startswith("cluster") else "one GPU fabric"


fig, axes = plt.subplots(1, 3, figsize=(17, 9), gridspec_kw={"width_ratios": [1, 1, 1.1]})
by_family = {}
for p in points:
    by_family.setdefault(family(p["case"]), {}).setdefault(p["case"], []).append(
        (int(p["size_bytes"]), 100 * float(p["error"])))
for ax, name in zip(axes[:2], ("one GPU fabric and clusters", "NICs' schedule tables")):
    ax.set_prop_cycle(color=plt.cm.tab20.colors + plt.cm.tab20b.colors)
    fams = ["one GPU fabric", "clusters"] if name.startswith("one") else [name]
    for fam in fams:
        for case, xs in sorted(by_family.get(fam, {}).items()):
            xs.sort()
            ax.plot([x for x, _ in xs], [e for _, e in xs], marker="o", ms=3, lw=1,
                    ls="-" if fam != "clusters" else "--", label=case)
    ax.axhspan(-5, 5, color="green", alpha=0.08)
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("flow against packet level (%)")
    ax.set_title("collectives: " + name)
    ax.grid(alpha=0.3)
    # Below the axes: the cases are too many to leave room for the points.
    ax.legend(fontsize=6, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.12))
if train:
    ax = axes[2]
    labels = [t["case"] for t in train]
    x = range(len(train))
    bars = (("error", "iteration"), ("comm_error", "collectives' summed time"),
            ("shared_error", "iteration, flow.share_links"), ("shared_comm_error", "collectives, flow.share_links"))
    for k, (key, label) in enumerate(bars):
        ax.bar([i - 0.3 + 0.2 * k for i in x], [100 * float(t[key]) for t in train], 0.2, label=label)
    for i, t in enumerate(train):
        ax.annotate("%.1f%%\nbeside\nanother" % (100 * float(t["shared_time"])), (i, 0),
                    textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
    ax.axhspan(-5, 5, color="green", alpha=0.08)
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=25, ha="right", fontsize=7)
    ax.set_ylabel("flow against packet level (%)")
    ax.set_title("training: one iteration")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
fig.tight_layout()
out = os.path.join(figures, "flow-vs-packet.png")
fig.savefig(out, dpi=110)
print("wrote %s (%d collective points, %d training cases)" % (out, len(points), len(train)))
