#!/usr/bin/python3
"""Figures of Huang et al., "Communication Algorithm-Architecture Co-Design
for Distributed Deep Learning", ISCA 2021 (MultiTree, §VI), from the
campaign CSVs of scripts/campaigns/multitree-*.yaml. Called by
scripts/figures/multitree-fig9.sh and multitree-fig10.sh; see
docs/multitree.md.

  multitree-plot.py fig9  --csv TORUS.csv --csv MESH.csv ... --out docs/figures
  multitree-plot.py fig10 --csv FIG10.csv [--csv FIG10-LARGE.csv] --out docs/figures

Each writes docs/figures/multitree-<fig>.csv (every simulated row),
multitree-<fig>.png and a summary CSV; prints the paper's claims beside
ours; exits 1 when a row has wrong elements (#wrong != 0).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from incsim_campaign.campaign import format_size  # noqa: E402
from incsim_campaign.figures import (FigError, _plt, algbw_axes, claim,  # noqa: E402
                                     draw, figure_main, paper, save, series, write_table)

# What the paper states (MultiTree, ISCA 2021, §VI), each with its source:
# scripts/figures/reference/multitree-*.csv.
PAPER = paper("multitree")

ALGS = ["ring", "dbtree", "ring2d", "ring2d-hier", "hd", "hdrm", "multitree", "multitree-msg"]
COLORS = {"ring": "#444444", "dbtree": "#9467bd", "ring2d": "#2ca02c", "ring2d-hier": "#98df8a", "hd": "#8c564b",
          "hdrm": "#ff7f0e", "multitree": "#1f77b4", "multitree-msg": "#d62728"}
# (panel, platform, shape column, shapes): Fig. 9 (a)-(d)
PANELS = [("a", "torus", "dims", ["4x4", "8x8"]), ("b", "mesh", "dims", ["4x4", "8x8"]),
          ("c", "fattree", "nodes", [16, 64]), ("d", "bigraph", "dims", ["4x8", "4x16"])]


def _shape(r, col):
    v = r.get(col)
    return str(v) if v not in (None, "") else ""


def fig9(rows, out):
    plt = _plt()
    fig, axes = plt.subplots(2, 4, figsize=(18, 8))
    summary = []
    print("MultiTree Fig. 9 (all-reduce bandwidth = size / time):")
    for col, (panel, platform, key, shapes) in enumerate(PANELS):
        for row, shape in enumerate(shapes):
            ax = axes[row][col]
            pts = [r for r in rows if r["platform"] == platform and _shape(r, key) == str(shape)]
            s = series(pts, lambda r: r["algorithm"])
            sizes = set()
            for a in ALGS:
                if a in s:
                    draw(ax, s[a], label=a, color=COLORS[a])
                    sizes |= set(s[a])
            if not sizes:
                ax.set_visible(False)
                continue
            name = "%s %s" % (platform, shape if key == "dims" else "%s nodes" % shape)
            algbw_axes(ax, sizes, "(%s) %s" % (panel, name))
            ax.legend(fontsize=7, loc="upper left")
            for a in s:
                for z, v in s[a].items():
                    summary.append((platform, shape, a, z, v["algbw_GBps"], v["time_us"]))
            describe(name, s, platform)
    save(fig, os.path.join(out, "multitree-fig9.png"))
    write_table(os.path.join(out, "multitree-fig9-summary.csv"),
                ["platform", "shape", "algorithm", "size_bytes", "algbw_GBps", "time_us"], summary)


def describe(name, s, platform):
    """The paper's §VI-A claims for one network, ours beside them."""
    mt = s.get("multitree")
    if not mt:
        return
    others = [a for a in s if not a.startswith("multitree")]
    best = [z for z in mt if all(z not in s[a] or mt[z]["algbw_GBps"] >= s[a][z]["algbw_GBps"] for a in others)]
    print("  %s: MultiTree at or above every baseline at %d of %d sizes" % (name, len(best), len(mt)))
    for a in sorted(others):
        common = sorted(set(mt) & set(s[a]))
        if common:
            lo, hi = common[0], common[-1]
            print("    over %-8s %s: %.2fx   %s: %.2fx" % (
                a, format_size(lo), s[a][lo]["time_us"] / mt[lo]["time_us"],
                format_size(hi), s[a][hi]["time_us"] / mt[hi]["time_us"]))
    if platform in ("torus", "mesh") and others:
        largest = max(mt)
        worst = min((a for a in others if largest in s[a]), key=lambda a: s[a][largest]["algbw_GBps"])
        print("    worst at %s: %s (paper: dbtree worst on torus and mesh)" % (format_size(largest), worst))
    msg = s.get("multitree-msg")
    if msg:
        largest = max(set(mt) & set(msg))
        claim("%s: MULTITREEMSG over MULTITREE at %s" % (name, format_size(largest)),
              mt[largest]["time_us"] / msg[largest]["time_us"], PAPER["msg_gain"], "x")


def fig10(rows, out):
    plt = _plt()
    pts = [r for r in rows if r["platform"] == "torus"]
    nodes = lambda r: int(r["dims"].split("x")[0]) * int(r["dims"].split("x")[1])  # noqa: E731
    by = {}
    for r in pts:
        by.setdefault(r["algorithm"], {}).setdefault(nodes(r), []).append(r["time_us"])
    if "ring" not in by or 16 not in by["ring"]:
        raise FigError("fig10 needs the ring's 16-node run to normalise to")
    base = sum(by["ring"][16]) / len(by["ring"][16])
    fig, ax = plt.subplots(figsize=(7, 4.6))
    table = []
    for a in ["ring", "ring2d", "ring2d-hier", "multitree-msg", "multitree"]:
        if a not in by:
            continue
        ns = sorted(by[a])
        t = [sum(by[a][n]) / len(by[a][n]) / base for n in ns]
        ax.plot(ns, t, marker="o", label=a, color=COLORS[a])
        table += [(a, n, 375 * n * 1024, sum(by[a][n]) / len(by[a][n]), v) for n, v in zip(ns, t)]
    ax.set_xlabel("nodes in the 2D torus (all-reduce of 375 x N KiB)")
    ax.set_ylabel("time / ring's time at 16 nodes")
    ax.set_xticks(sorted({n for a in by for n in by[a]}))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("MultiTree Fig. 10: weak scaling on the torus", fontsize=10)
    save(fig, os.path.join(out, "multitree-fig10.png"))
    write_table(os.path.join(out, "multitree-fig10-summary.csv"),
                ["algorithm", "nodes", "size_bytes", "time_us", "time_over_ring16"], table)
    print("MultiTree Fig. 10 (weak scaling, torus):")
    msg = by.get("multitree-msg", {})
    for n in sorted(msg):
        for a, key in (("ring", "weak_over_ring"), ("ring2d", "weak_over_ring2d")):
            if n in by.get(a, {}):
                claim("%d nodes: MULTITREEMSG speedup over %s" % (n, a),
                      (sum(by[a][n]) / len(by[a][n])) / (sum(msg[n]) / len(msg[n])), PAPER[key], "x")


def main(argv=None):
    figs = {"fig9": lambda rows, out, args: fig9(rows, out),
            "fig10": lambda rows, out, args: fig10(rows, out)}
    return figure_main(__doc__, "multitree", figs, argv, ("dims", "nodes"))


if __name__ == "__main__":
    sys.exit(main())
