#!/usr/bin/python3
"""Figures of Wang et al., "Blink: Fast and Generic Collectives for
Distributed ML", MLSys 2020 (§5.2, Fig. 14 and 16), from the campaign CSVs
of scripts/campaigns/blink-dgx1v.yaml and blink-dgx1p.yaml. Called by
scripts/figures/blink-dgx1.sh; see docs/blink.md.

  blink-plot.py dgx1 --csv DGX1V.csv --csv DGX1P.csv --out docs/figures
  blink-plot.py dgx2 --csv DGX2.csv --out docs/figures
  blink-plot.py multiserver --csv MULTISERVER.csv --out docs/figures

Writes docs/figures/blink-dgx1.csv (every simulated row), blink-dgx1.png
(throughput per allocation, Blink vs ring, broadcast and all-reduce, both
servers) and blink-dgx1-summary.csv (speed-ups: largest and geometric mean);
prints the paper's claims beside ours; exits 1 when a row has wrong elements.
dgx2 writes blink-dgx2.csv, blink-dgx2.png (all-reduce latency against size,
one-hop trees vs ring, double binary tree and MultiTree on DGX-2, and the
ratio of the best NCCL algorithm's latency to Blink's) and
blink-dgx2-summary.csv. multiserver writes blink-multiserver.csv and .png
(Fig. 19b: all-reduce throughput against cross-server bandwidth).
"""

import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from incsim_campaign.figures import (_plt, _size_axis, claim,  # noqa: E402
                                     figure_main, paper, save, series, write_table)

# What the paper states (Blink, MLSys 2020, §5.2), each with its source:
# scripts/figures/reference/blink-*.csv.
PAPER = paper("blink")
SERVERS = [("dgx1v", "DGX-1V"), ("dgx1p", "DGX-1P")]
COLLECTIVES = [("broadcast", "Broadcast (Fig. 14)"), ("allreduce", "AllReduce (Fig. 16)")]
COLORS = {"blink": "#d62728", "ring": "#444444"}


def _alloc_key(gpus):
    g = [int(x) for x in str(gpus).split(",")]
    return (len(g), g)


def dgx1(rows, out):
    plt = _plt()
    fig, axes = plt.subplots(4, 1, figsize=(18, 16))
    summary = []
    print("Blink Fig. 14 and 16 (algbw = size / time, one large size):")
    panel = 0
    for platform, server in SERVERS:
        for coll, title in COLLECTIVES:
            ax = axes[panel]
            panel += 1
            pts = [r for r in rows if r["platform"] == platform and r["collective"] == coll]
            by = {}
            for r in pts:
                by.setdefault(str(r["gpus"]), {})[r["algorithm"]] = r
            allocs = sorted(by, key=_alloc_key)
            allocs = [a for a in allocs if "blink" in by[a] and "ring" in by[a]]
            if not allocs:
                continue
            speed = [by[a]["blink"]["algbw_GBps"] / by[a]["ring"]["algbw_GBps"] for a in allocs]
            geo = math.exp(sum(math.log(s) for s in speed) / len(speed))
            best = max(range(len(allocs)), key=lambda i: speed[i])
            worst = min(range(len(allocs)), key=lambda i: speed[i])
            x = list(range(len(allocs)))
            w = 0.4
            for k, alg in enumerate(["ring", "blink"]):
                ax.bar([i + (k - 0.5) * w for i in x], [by[a][alg]["algbw_GBps"] for a in allocs], w,
                       color=COLORS[alg], label="NCCL-style ring" if alg == "ring" else "Blink trees")
            ax.set_xticks(x)
            ax.set_xticklabels(allocs, rotation=90, fontsize=7)
            ax.set_ylabel("algbw (GB/s)")
            key = "%s_%%s_%s" % (coll, platform)
            said = lambda what: " (paper %gx)" % PAPER[key % what] if key % what in PAPER else ""  # noqa: E731
            ax.set_title("%s %s, %s: Blink/ring geometric mean %.2fx%s, largest %.2fx%s (%s)" % (
                server, title, "32 MiB", geo, said("geo"), speed[best], said("max"),
                allocs[best]), fontsize=10)
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=8, loc="upper left")
            summary.append([server, coll, len(allocs), geo, speed[best], allocs[best], speed[worst],
                            allocs[worst]])
            print(" %s %s over %d allocations:" % (server, coll, len(allocs)))
            if key % "max" in PAPER:
                claim("largest speed-up of Blink over the ring", speed[best], PAPER[key % "max"], "x")
                claim("geometric mean speed-up", geo, PAPER[key % "geo"], "x")
            else:
                print("  largest %.2fx, geometric mean %.2fx (the paper omits these numbers)" % (
                    speed[best], geo))
            print("  smallest speed-up %.2fx (%s)" % (speed[worst], allocs[worst]))
    save(fig, os.path.join(out, "blink-dgx1.png"))
    write_table(os.path.join(out, "blink-dgx1-summary.csv"),
                ["server", "collective", "allocations", "geomean_speedup", "max_speedup", "max_at",
                 "min_speedup", "min_at"], summary)


DGX2_ALGS = [("blink", "Blink one-hop trees", "#d62728"), ("ring", "ring (NCCL)", "#444444"),
             ("dbtree", "double binary tree (NCCL 2.4)", "#9467bd"), ("multitree", "MultiTree", "#1f77b4")]


def dgx2(rows, out):
    plt = _plt()
    fig, (ax, rx) = plt.subplots(1, 2, figsize=(14, 5))
    s = series(rows, lambda r: r["algorithm"])
    sizes = sorted(set().union(*[set(c) for c in s.values()]))
    for alg, label, color in DGX2_ALGS:
        if alg in s:
            c = s[alg]
            ax.plot(sorted(c), [c[x]["time_us"] for x in sorted(c)], marker=".", color=color, label=label)
    _size_axis(ax, sizes)
    ax.set_yscale("log")
    ax.set_ylabel("all-reduce time (us)")
    ax.set_title("DGX-2, 16 GPUs: all-reduce latency (Blink Fig. 27)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    table = []
    best_ratio, best_at = 0, None
    if "blink" in s:
        b = s["blink"]
        for alg, label, color in DGX2_ALGS[1:]:
            if alg not in s:
                continue
            common = [x for x in sorted(b) if x in s[alg]]
            rx.plot(common, [s[alg][x]["time_us"] / b[x]["time_us"] for x in common], marker=".", color=color,
                    label="%s / Blink" % label)
        for x in sorted(b):
            nccl = [s[a][x]["time_us"] for a in ("ring", "dbtree") if a in s and x in s[a]]
            row = [x, b[x]["time_us"]] + [s[a][x]["time_us"] if a in s and x in s[a] else ""
                                          for a in ("ring", "dbtree", "multitree")]
            if nccl:
                ratio = min(nccl) / b[x]["time_us"]
                row.append(ratio)
                if ratio > best_ratio:
                    best_ratio, best_at = ratio, x
            table.append(row)
    _size_axis(rx, sizes)
    rx.axhline(1.0, color="black", lw=0.8)
    rx.set_ylabel("latency / Blink's")
    rx.set_title("the other algorithms' latency over Blink's (above 1: Blink is faster)", fontsize=10)
    rx.grid(True, alpha=0.3)
    rx.legend(fontsize=8)
    save(fig, os.path.join(out, "blink-dgx2.png"))
    write_table(os.path.join(out, "blink-dgx2-summary.csv"),
                ["size_bytes", "blink_us", "ring_us", "dbtree_us", "multitree_us", "best_nccl_over_blink"], table)
    if best_at is not None:
        print("Blink Fig. 27 (DGX-2 all-reduce latency):")
        claim("largest latency ratio, best of ring and dbtree over Blink", best_ratio,
              PAPER["dgx2_latency"], "x")
        print("  at %d B" % best_at)


def multiserver(rows, out):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 5))
    col = "dgx1.net_Gbps"
    print("Blink Fig. 19(b) (two DGX-1V, 3 + 5 GPUs, all-reduce algbw):")
    for alg, label in (("blink", "Blink three-phase"), ("ring", "NCCL-style ring")):
        pts = sorted((r[col], r["algbw_GBps"]) for r in rows if r["algorithm"] == alg)
        if not pts:
            continue
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=COLORS[alg], label=label)
        print("  %-18s %s" % (label, ", ".join("%g Gbps: %.1f GB/s" % p for p in pts)))
    gb = sorted({r[col] for r in rows})
    ax.plot(gb, [g / 8 for g in gb], ls=":", color="gray", label="network link (Gbps / 8)")
    ax.set_xlabel("cross-server bandwidth (Gbit/s, each direction)")
    ax.set_ylabel("all-reduce algbw (GB/s)")
    ax.set_title("Two DGX-1V servers, 3 + 5 GPUs, 32 MiB (Blink Fig. 19b)", fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, os.path.join(out, "blink-multiserver.png"))


FIGS = {"dgx1": dgx1, "dgx2": dgx2, "multiserver": multiserver}


def main(argv=None):
    figs = {k: (lambda f: lambda rows, out, args: f(rows, out))(f) for k, f in FIGS.items()}
    return figure_main(__doc__, "blink", figs, argv)


if __name__ == "__main__":
    sys.exit(main())
