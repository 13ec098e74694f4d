#!/usr/bin/python3
"""Figures of Klenk et al., "An In-Network Architecture for Accelerating
Shared-Memory Multiprocessor Collectives", ISCA 2020 (§VI), from the
campaign CSVs of scripts/campaigns/klenk-*.yaml. Called by
scripts/figures/klenk-*.sh; see docs/klenk-figures.md.

  klenk-plot.py fig7    --csv RING_PUSH.csv --csv PULL.csv --out docs/figures
  klenk-plot.py fig8    --csv FIG8.csv    --out docs/figures
  klenk-plot.py fig9    --csv FIG9.csv    --out docs/figures [--incsim BIN]
  klenk-plot.py fig10   --csv FIG10.csv   --out docs/figures
  klenk-plot.py latency --csv LAT.csv     --out docs/figures

Each writes docs/figures/klenk-<fig>.csv (every simulated row, the campaign
CSVs merged), klenk-<fig>.png and, where there is one, a small summary CSV;
prints the numbers the paper states in its text beside ours; and exits 1
when a row has wrong elements (#wrong != 0) or no rows were simulated.
Seeds are averaged (time and latency means; bandwidth = size / mean time).
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from incsim_campaign.campaign import format_size  # noqa: E402
from incsim_campaign.figures import (FigError, _plt, _size_axis, algbw_axes,  # noqa: E402
                                     bound_GBps, claim, draw, figure_main, paper,
                                     peak, save, series, write_table)

# Numbers the paper states (Klenk et al., ISCA 2020), each with its source:
# scripts/figures/reference/klenk-*.csv.
PAPER = paper("klenk")

# Fig. 9 (c) also shows this size, where push depends most on the table.
MID_SIZE = 256 * 1024

COLORS = {"ring": "#444444", "pull": "#1f77b4", "pull (no barrier)": "#7fb8e6",
          "push": "#d62728"}


# Settings columns some of the merged campaign CSVs lack.
SETTING_ONLY = ("pull.barrier", "gpu.copy_engine.waves",
                "switch.reduction_table.bytes")


def payload_line(ax, ours=None):
    ax.axhline(PAPER["payload_GBps"], color="k", ls=":", lw=1,
               label="paper: max payload bw %g GB/s" % PAPER["payload_GBps"])
    if ours:
        ax.axhline(ours, color="k", ls="--", lw=0.8, alpha=0.5,
                   label="incsim bound %.1f GB/s" % ours)


def _label(r):
    if r["algorithm"] == "pull" and str(r.get("pull.barrier")) == "false":
        return "pull (no barrier)"
    return r["algorithm"]


# --------------------------------------------------------------------------
# figures

def fig7(rows, out):
    """Fig. 7: DGX-2 all-reduce bandwidth (a) and speedup over ring (b)."""
    plt = _plt()
    s = series(rows, _label)
    order = [n for n in ("ring", "pull", "pull (no barrier)", "push") if n in s]
    if "ring" not in s:
        raise FigError("fig7 needs the ring rows")
    ring = s["ring"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.6))
    sizes = set()
    for n in order:
        draw(a, s[n], label=n, color=COLORS[n])
        sizes |= set(s[n])
    payload_line(a, bound_GBps([r for r in rows if r["algorithm"] != "ring"]))
    algbw_axes(a, sizes, "(a) all-reduce bandwidth, DGX-2 (16 GPUs)")
    a.legend(fontsize=8, loc="upper left")
    table = []
    for n in order:
        if n == "ring":
            continue
        common = sorted(set(s[n]) & set(ring))
        sp = [ring[z]["time_us"] / s[n][z]["time_us"] for z in common]
        b.plot(common, sp, marker=".", label=n, color=COLORS[n])
        for z, v in zip(common, sp):
            table.append((n, z, s[n][z]["algbw_GBps"],
                          ring[z]["algbw_GBps"], v))
    for y in (1, PAPER["speedup_large"]):
        b.axhline(y, color="k", ls=":", lw=1)
    b.text(min(sizes), PAPER["speedup_large"] * 1.02,
           "%gx (paper: large sizes)" % PAPER["speedup_large"], fontsize=8,
           va="bottom")
    b.axhline(PAPER["speedup_small_max"], color="0.5", ls="-.", lw=0.8,
              label="paper: up to %gx" % PAPER["speedup_small_max"])
    _size_axis(b, sorted(sizes))
    b.set_yscale("log", base=2)
    b.set_yticks([0.5, 1, 2, 4, 8, 16, 32])
    b.set_yticklabels(["0.5", "1", "2", "4", "8", "16", "32"])
    b.set_ylabel("speedup over the ring all-reduce (x)")
    b.set_title("(b) speedup over ring (dotted: 1x, 2x)", fontsize=10)
    b.grid(True, alpha=0.3)
    b.legend(fontsize=8)
    save(fig, os.path.join(out, "klenk-fig7.png"))
    write_table(os.path.join(out, "klenk-fig7-speedup.csv"),
                ["series", "size_bytes", "algbw_GBps", "ring_algbw_GBps",
                 "speedup"], table)

    print("Klenk Fig. 7 (DGX-2):")
    lo, hi = min(ring), max(ring)
    for n in order:
        z, v = peak(s[n])
        print("  peak %-18s %6.1f GB/s at %s" % (n, v, format_size(z)))
    claim("push peak algbw vs the 120 GB/s payload maximum",
          peak(s["push"])[1], PAPER["payload_GBps"], " GB/s")
    for n in order[1:]:
        claim("%s speedup over ring at %s" % (n, format_size(hi)),
              ring[hi]["time_us"] / s[n][hi]["time_us"],
              PAPER["speedup_large"], "x")
    for n in order[1:]:
        sp = {z: ring[z]["time_us"] / s[n][z]["time_us"] for z in s[n]
              if z in ring}
        z = max(sp, key=sp.get)
        claim("%s largest speedup (at %s; %s: %.1fx)" % (
            n, format_size(z), format_size(lo), sp[lo]), sp[z],
            PAPER["speedup_small_max"], "x")


def fig8(rows, out):
    """Fig. 8: fat tree, 64 and 128 GPUs, push and pull."""
    plt = _plt()
    s = series(rows, lambda r: (int(r["gpus"]), r["algorithm"]))
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    gcol = {64: "#1f77b4", 128: "#ff7f0e"}
    sizes = set()
    for (g, alg) in sorted(s):
        draw(ax, s[(g, alg)], label="%s, %d GPUs" % (alg, g),
             color=gcol.get(g), ls="-" if alg == "push" else "--",
             marker="o" if alg == "push" else "s", ms=4)
        sizes |= set(s[(g, alg)])
    for g, key in ((64, "fattree64_peak_GBps"), (128, "fattree128_peak_GBps")):
        ax.axhline(PAPER[key], color=gcol[g], ls=":", lw=1,
                   label="paper: peak ~%g GB/s, %d GPUs" % (PAPER[key], g))
    payload_line(ax, bound_GBps(rows))
    algbw_axes(ax, sizes, "Fig. 8: all-reduce on the 2-level fat tree "
               "(push 256 B/port, 64 waves; pull 1 KiB/port, 16 waves)")
    ax.legend(fontsize=7, ncol=2, handlelength=3.5)
    save(fig, os.path.join(out, "klenk-fig8.png"))
    print("Klenk Fig. 8 (fat tree):")
    for g, key in ((64, "fattree64_peak_GBps"), (128, "fattree128_peak_GBps")):
        best = []
        for alg in ("push", "pull"):
            if (g, alg) in s:
                z, v = peak(s[(g, alg)])
                print("  peak %s, %d GPUs: %6.1f GB/s at %s (largest size "
                      "run %s)" % (alg, g, v, format_size(z),
                                   format_size(max(s[(g, alg)]))))
                best.append(v)
        if best:
            claim("best peak algbw at %d GPUs" % g, max(best), PAPER[key],
                  " GB/s")


def table_sizing(incsim, platform, algorithm):
    """(C_min total bytes, C_min bytes per port, the header line) from the
    "# table sizing" line incsim prints for a push or pull run (Klenk
    Eq. (1) for pull, Eq. (2) for push)."""
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    argv = [incsim, "--platform", platform, "--collective", "allreduce",
            "--algorithm", algorithm, "--sizes", "8K", "--quiet"]
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True,
                           env=env, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise FigError("cannot run %s: %s" % (" ".join(argv), e))
    for line in p.stdout.splitlines():
        if line.startswith("# table sizing"):
            m = re.search(r"C_min = (\d+) B.*?= (\d+) B per (access )?port",
                          line)
            if m:
                return int(m.group(1)), int(m.group(2)), line
    raise FigError("no '# table sizing' line in the output of `%s`" %
                   " ".join(argv))


def first_reaching(curve_by_table, frac):
    """The smallest table whose bandwidth is at least frac x the best."""
    best = max(curve_by_table.values())
    for t in sorted(curve_by_table):
        if curve_by_table[t] >= frac * best:
            return t, best
    return None, best


def fig9(rows, out, incsim):
    """Fig. 9: table size sensitivity without waves on DGX-2."""
    plt = _plt()
    tcol = "switch.reduction_table.bytes"
    s = series(rows, lambda r: (r["algorithm"], int(r[tcol])))
    algs = [a for a in ("pull", "push") if any(k[0] == a for k in s)]
    tables = sorted({k[1] for k in s})
    cmap = plt.get_cmap("viridis")
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    sizes = {z for c in s.values() for z in c}
    big = max(sizes)
    for ax, alg, tag in zip(axes, algs, "ab"):
        for i, t in enumerate(tables):
            if (alg, t) in s:
                draw(ax, s[(alg, t)], label="%s B/port" % format_size(t),
                     color=cmap(i / max(1, len(tables) - 1)))
        payload_line(ax)
        algbw_axes(ax, sizes, "(%s) %s, no waves (DGX-2)" % (tag, alg))
        ax.legend(fontsize=7, ncol=2)
    # (c) bandwidth at the largest size (solid) and at a mid size (dashed)
    # against the table size, with the Little's-law minimum of Eq. (1)/(2).
    c = axes[2]
    at_sizes = [z for z in (MID_SIZE, big) if z in sizes]
    sizing, summary, found = [], [], []
    for alg in algs:
        for z in at_sizes:
            at = {t: s[(alg, t)][z]["algbw_GBps"] for t in tables
                  if (alg, t) in s and z in s[(alg, t)]}
            ts = sorted(at)
            c.plot(ts, [at[t] for t in ts], marker="o", color=COLORS[alg],
                   ls="-" if z == big else "--", ms=4 if z == big else 3,
                   label="%s at %s" % (alg, format_size(z)))
            t90, best = first_reaching(at, 0.9)
            found.append((alg, z, at, t90, best))
            for t in ts:
                summary.append((alg, z, t, at[t], at[t] / best,
                                "yes" if t == t90 else ""))
        total, per_port, line = table_sizing(incsim, "dgx2", alg)
        paper = PAPER["%s_cmin_port_B" % alg]
        c.axvline(per_port, color=COLORS[alg], ls="-.", lw=1,
                  label="%s C_min Eq. (%d): %d B/port" % (
                      alg, 1 if alg == "pull" else 2, per_port))
        c.axvline(paper, color=COLORS[alg], ls=":", lw=1,
                  label="paper: ~%g B/port" % paper)
        sizing.append((alg, total, per_port, paper, line[2:]))
    c.set_xscale("log", base=2)
    c.set_xticks(tables)
    c.set_xticklabels([format_size(t) for t in tables])
    c.minorticks_off()
    c.set_xlabel("reduction table per switch port (bytes)")
    c.set_ylabel("algorithm bandwidth (GB/s)")
    c.set_ylim(bottom=0)
    c.set_title("(c) bandwidth vs table size; C_min of Eq. (1)/(2)",
                fontsize=10)
    c.grid(True, alpha=0.3)
    c.legend(fontsize=7)
    save(fig, os.path.join(out, "klenk-fig9.png"))
    write_table(os.path.join(out, "klenk-fig9-tables.csv"),
                ["algorithm", "size_bytes", "table_bytes_per_port",
                 "algbw_GBps", "fraction_of_best", "first_at_90pct"], summary)
    write_table(os.path.join(out, "klenk-fig9-sizing.csv"),
                ["algorithm", "cmin_bytes", "cmin_bytes_per_port",
                 "paper_bytes_per_port", "incsim_header"], sizing)
    print("Klenk Fig. 9 (DGX-2, no waves):")
    for alg, total, per_port, paper, _ in sizing:
        claim("%s C_min per port (Eq. %d)" % (alg, 1 if alg == "pull" else 2),
              per_port, paper, " B")
    for alg, z, at, t90, best in found:
        print("  %s at %s: %s; best %.1f GB/s, 90 %% of it from %s B/port" % (
            alg, format_size(z),
            ", ".join("%s: %.1f" % (format_size(t), at[t]) for t in sorted(at)),
            best, format_size(t90)))


def fig10(rows, out):
    """Fig. 10: waves on the fat tree (64 GPUs here)."""
    plt = _plt()
    wcol = "gpu.copy_engine.waves"
    s = series(rows, lambda r: (r["algorithm"], int(r[wcol])))
    algs = [a for a in ("pull", "push") if any(k[0] == a for k in s)]
    waves = sorted({k[1] for k in s})
    gpus = sorted({int(r["gpus"]) for r in rows})
    table_of = {r["algorithm"]: int(r["switch.reduction_table.bytes"])
                for r in rows}
    cmap = plt.get_cmap("plasma")
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    sizes = {z for c in s.values() for z in c}
    big = max(sizes)
    for ax, alg, tag in zip(axes, algs, "ab"):
        for i, w in enumerate(waves):
            if (alg, w) in s:
                draw(ax, s[(alg, w)], label="%d waves" % w,
                     color=cmap(0.9 * i / max(1, len(waves) - 1)))
        payload_line(ax, bound_GBps(rows))
        algbw_axes(ax, sizes, "(%s) %s, %s B/port, fat tree %s GPUs" % (
            tag, alg, format_size(table_of[alg]),
            "/".join(map(str, gpus))))
        ax.legend(fontsize=7, ncol=2)
    c = axes[2]
    summary = []
    for alg in algs:
        at = {w: s[(alg, w)][big]["algbw_GBps"] for w in waves
              if (alg, w) in s and big in s[(alg, w)]}
        ws = sorted(at)
        c.plot(ws, [at[w] for w in ws], marker="o", color=COLORS[alg],
               label="%s at %s" % (alg, format_size(big)))
        best = max(at.values())
        for w in ws:
            summary.append((alg, big, w, at[w], at[w] / best))
    c.axvline(PAPER["pull_peak_waves"], color=COLORS["pull"], ls=":", lw=1,
              label="paper: pull peaks from %d waves" % PAPER["pull_peak_waves"])
    c.axvline(PAPER["push_fattree_waves"], color=COLORS["push"], ls=":", lw=1,
              label="paper: push %d waves (128 GPUs)" % PAPER["push_fattree_waves"])
    payload_line(c)
    c.set_xscale("log", base=2)
    c.set_xticks(waves)
    c.set_xticklabels([str(w) for w in waves])
    c.minorticks_off()
    c.set_xlabel("waves outstanding per copy engine (8 KiB each)")
    c.set_ylabel("algorithm bandwidth (GB/s)")
    c.set_ylim(bottom=0)
    c.set_title("(c) bandwidth at %s vs waves" % format_size(big),
                fontsize=10)
    c.grid(True, alpha=0.3)
    c.legend(fontsize=7)
    save(fig, os.path.join(out, "klenk-fig10.png"))
    write_table(os.path.join(out, "klenk-fig10-waves.csv"),
                ["algorithm", "size_bytes", "waves", "algbw_GBps",
                 "fraction_of_best"], summary)
    print("Klenk Fig. 10 (fat tree, %s GPUs):" % "/".join(map(str, gpus)))
    for alg in algs:
        at = {w: s[(alg, w)][big]["algbw_GBps"] for w in waves
              if (alg, w) in s and big in s[(alg, w)]}
        w90, best = first_reaching(at, 0.9)
        print("  %s at %s: %s; best %.1f GB/s, 90 %% of it from %d waves" % (
            alg, format_size(big),
            ", ".join("%d: %.1f" % (w, at[w]) for w in sorted(at)), best,
            w90))


def latency(rows, out):
    """§VI-D: mean packet latency with and without waves, DGX-2, 8 MiB."""
    plt = _plt()
    wcol = "gpu.copy_engine.waves"
    s = series(rows, lambda r: (r["algorithm"], int(r[wcol])))
    algs = [a for a in ("push", "pull") if any(k[0] == a for k in s)]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4.2))
    summary, x = [], 0
    ticks, labels = [], []
    for alg in algs:
        keys = sorted((k for k in s if k[0] == alg), key=lambda k: k[1] == 0)
        nowave = [s[k] for k in keys if k[1] == 0]
        base = None
        if nowave:
            base = list(nowave[0].values())[0]["latency_ns"]
        for k in keys:
            (size, v), = s[k].items()
            lab = "%s\n%s" % (alg, "no waves" if k[1] == 0 else
                              "%d waves" % k[1])
            col = COLORS[alg] if k[1] else "0.6"
            a.bar(x, v["latency_ns"] / 1e3, color=col)
            b.bar(x, v["algbw_GBps"], color=col)
            red = 1 - v["latency_ns"] / base if base and k[1] else None
            a.text(x, v["latency_ns"] / 1e3, "%.0f ns%s" % (
                v["latency_ns"], "\n-%.0f %%" % (100 * red)
                if red is not None else ""), ha="center", va="bottom",
                fontsize=8)
            b.text(x, v["algbw_GBps"], "%.1f" % v["algbw_GBps"],
                   ha="center", va="bottom", fontsize=8)
            if red is not None:
                a.plot([x - 0.4, x + 0.4],
                       [base * (1 - PAPER["latency_reduction"]) / 1e3] * 2,
                       color="k", ls=":", lw=1.5)
            summary.append((alg, k[1], size, v["seeds"], v["latency_ns"],
                            v["algbw_GBps"], 100 * red if red is not None
                            else ""))
            ticks.append(x)
            labels.append(lab)
            x += 1
        x += 0.5
    for ax in (a, b):
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels, fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    a.set_yscale("log")
    a.set_ylim(top=a.get_ylim()[1] * 2)
    a.set_ylabel("mean packet latency (\u00b5s, log)")
    a.set_title("(a) mean packet latency, %s all-reduce, DGX-2\n"
                "dotted: the paper's -90 %% from no waves" % format_size(size),
                fontsize=10)
    b.set_ylabel("algorithm bandwidth (GB/s)")
    b.set_title("(b) bandwidth of the same runs", fontsize=10)
    save(fig, os.path.join(out, "klenk-latency.png"))
    write_table(os.path.join(out, "klenk-latency-summary.csv"),
                ["algorithm", "waves", "size_bytes", "seeds",
                 "avg_packet_latency_ns", "algbw_GBps",
                 "latency_reduction_pct"], summary)
    print("Klenk §VI-D (DGX-2, %s):" % format_size(size))
    for alg, w, _, _, lat, bw, red in summary:
        print("  %s %s: mean packet latency %.0f ns, %.1f GB/s" % (
            alg, "no waves" if w == 0 else "%d waves" % w, lat, bw))
        if red != "":
            claim("%s latency reduction with waves" % alg, red,
                  100 * PAPER["latency_reduction"], " %")


FIGS = {"fig7": fig7, "fig8": fig8, "fig9": fig9, "fig10": fig10,
        "latency": latency}


def _incsim_arg(ap):
    ap.add_argument("--incsim", default=os.environ.get("INCSIM") or
                    os.path.join(REPO, "build", "incsim"),
                    help="simulator for the table sizing line (fig9)")


def main(argv=None):
    figs = {k: (lambda f: lambda rows, out, args: f(rows, out))(f) for k, f in FIGS.items()}
    figs["fig9"] = lambda rows, out, args: fig9(rows, out, args.incsim)
    return figure_main(__doc__, "klenk", figs, argv, SETTING_ONLY, _incsim_arg)


if __name__ == "__main__":
    sys.exit(main())
