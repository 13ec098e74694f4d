#!/usr/bin/python3
"""Training figures of the four papers (docs/training.md, Figures), from
the campaign CSVs of scripts/figures/*-training.yaml. Called by
scripts/figures/klenk-training.sh, multitree-training.sh,
blink-training.sh and netreduce-training.sh.

  plot-training.py klenk     --csv RESULTS.csv ... --out docs/figures
  plot-training.py multitree --csv RESULTS.csv ... --out docs/figures
  plot-training.py blink     --csv SINGLE.csv --csv MULTI.csv --out docs/figures
  plot-training.py netreduce --csv TABLE7.csv --csv TABLE9.csv --csv FIG11.csv --out docs/figures

Each writes docs/figures/<paper>-training.csv (every simulated row),
<paper>-training.png and <paper>-training-summary.csv; prints the paper's
numbers (scripts/figures/reference/<paper>-training.csv) beside ours; exits
1 when a row has wrong elements (#wrong != 0).

klenk: Klenk et al. ISCA 2020 Fig. 11, push over the ring on DGX-2, the
best of one-shot and layer-wise overlap for each, against the sub-batch,
Volta and the 4x projection. multitree: MultiTree ISCA 2021 Fig. 11 (a)
and (b), the iteration's breakdown normalised to the ring's. blink: Blink
MLSys 2020 Fig. 17 and 19(a), the iteration-time reduction of Blink over
the ring on DGX-1V allocations and on two DGX-1V servers. netreduce:
NetReduce ASPLOS 2023 Tables 7 and 9 and Fig. 11A, images per second per
GPU of each algorithm on the rack (4 V100 hosts; 6 RTX 2080 hosts) and on
4 machines of 8 V100s, the gains over the ring, and Table 7's iteration
and communication times.
"""

import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from incsim_campaign.figures import (FigError, _plt, claim, figure_main,  # noqa: E402
                                     paper, save, write_table)

OVERLAP = "train.overlap"
COLORS = {"ring": "#444444", "push": "#d62728", "multitree": "#1f77b4", "blink": "#d62728"}


def _overlapped(r):
    return str(r.get(OVERLAP, "true")).lower() == "true"


def _runs(rows, keys):
    """{(key values..., algorithm): row}: one row per run and algorithm
    (each point has the algorithm's row and the baseline's)."""
    out = {}
    for r in rows:
        k = tuple(r[c] if c != OVERLAP else _overlapped(r) for c in keys) + (r["algorithm"],)
        if k in out:
            raise FigError("two rows for %s" % (k,))
        out[k] = r
    return out


def _geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


# --------------------------------------------------------------------------
# Klenk Fig. 11

KLENK_MODELS = [("transformer-big", "(a) Transformer (sentence length 80)", "tokens per GPU", 80),
                ("resnet50", "(b) ResNet-50", "images per GPU", 1),
                ("bert-large", "(c) BERT (sentence length 512)", "sequences per GPU", 1)]
KLENK_COMPUTE = [("v100", "Volta", "-"), ("v100x4", "Volta 4:1", "--")]


def klenk(rows, out, ref):
    plt = _plt()
    runs = _runs(rows, ("model", "compute", "batch", OVERLAP))
    fig, axes = plt.subplots(2, 3, figsize=(16, 8.5))
    table = []
    best_speedup = (0, None)
    print("Klenk Fig. 11 (push over the ring on DGX-2, fp16, best of one-shot and layer-wise overlap):")
    for col, (model, title, xlabel, per) in enumerate(KLENK_MODELS):
        top, bottom = axes[0][col], axes[1][col]
        drawn, ticks = False, set()
        for comp, cname, ls in KLENK_COMPUTE:
            batches = sorted({k[2] for k in runs if k[0] == model and k[1] == comp})
            batches = [b for b in batches if all((model, comp, b, o, a) in runs
                                                 for o in (False, True) for a in ("push", "ring"))]
            if not batches:
                continue
            drawn = True
            t = lambda b, o, a: runs[(model, comp, b, o, a)]["time_us"]  # noqa: E731
            xs = [b * per for b in batches]
            ticks |= set(xs)
            speed = []
            for b in batches:
                s = min(t(b, False, "ring"), t(b, True, "ring")) / min(t(b, False, "push"), t(b, True, "push"))
                speed.append(s)
                share = runs[(model, comp, b, False, "ring")]["comm_us"] / t(b, False, "ring")
                table.append([model, comp, b, b * per, t(b, False, "push"), t(b, True, "push"),
                              t(b, False, "ring"), t(b, True, "ring"),
                              runs[(model, comp, b, False, "ring")]["compute_us"], share, s])
                if s > best_speedup[0]:
                    best_speedup = (s, "%s %s sub-batch %d" % (model, cname, b))
            top.plot(xs, speed, marker="o", ls=ls, color=COLORS["push"], label="push / ring, %s" % cname)
            for a in ("ring", "push"):
                gain = [t(b, False, a) / t(b, True, a) for b in batches]
                bottom.plot(xs, gain, marker="o", ls=ls, color=COLORS[a], label="%s, %s" % (a, cname))
            print("  %s, %s:" % (title, cname))
            for b, s in zip(batches, speed):
                print("    sub-batch %5d (%s %d): push over ring %.2fx; one-shot/overlap ring %.2f, push %.2f" % (
                    b, xlabel.split()[0], b * per, s, t(b, False, "ring") / t(b, True, "ring"),
                    t(b, False, "push") / t(b, True, "push")))
            if model == "transformer-big":
                pays = [b * per for b in batches if t(b, True, "ring") < t(b, False, "ring")]
                key = "ring_overlap_from_tokens_%s" % comp
                if pays and pays[0] == xs[0]:
                    print("    the ring's overlap pays at every sub-batch run, from the smallest, %d tokens "
                          "(paper: above %g)" % (xs[0], ref[key]))
                elif pays:
                    claim("%s: the ring's overlap pays from (tokens)" % cname, pays[0], ref[key])
                else:
                    print("    the ring's overlap pays at none of these sub-batches (paper: above %g tokens)" % ref[key])
                share = max(runs[(model, comp, b, False, "ring")]["comm_us"] / t(b, False, "ring") for b in batches)
                claim("%s: ring one-shot all-reduce share, largest (Fig. 1b)" % cname, share,
                      ref["ring_comm_share_%s" % comp])
        if not drawn:
            for ax in (top, bottom):
                ax.set_axis_off()
                ax.text(0.5, 0.5, "%s:\nnot run (FULL=1 runs it)" % title, ha="center", va="center",
                        transform=ax.transAxes, fontsize=9)
            continue
        top.axhline(ref["train_max_speedup_nvlink"], color="gray", ls=":",
                    label="paper: up to %gx (Transformer)" % ref["train_max_speedup_nvlink"])
        top.axhline(1.0, color="black", lw=0.8)
        top.set_title(title, fontsize=10)
        top.set_ylabel("training speed-up, push over ring")
        bottom.axhline(1.0, color="black", lw=0.8)
        bottom.set_ylabel("one-shot time / overlapped time")
        if model == "transformer-big":
            for comp, cname, ls in KLENK_COMPUTE:
                v = ref["ring_overlap_from_tokens_%s" % comp]
                bottom.axvline(v, color="gray", ls=ls, lw=0.8,
                               label="paper: ring's overlap pays above %g (%s)" % (v, cname))
        for ax in (top, bottom):
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(ticks))
            ax.set_xticklabels([str(v) for v in sorted(ticks)])
            ax.set_xlabel(xlabel)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
    if best_speedup[1]:
        claim("largest training speed-up of push (%s)" % best_speedup[1], best_speedup[0],
              ref["train_max_speedup_nvlink"], "x")
    fig.suptitle("Klenk Fig. 11: push vs ring on DGX-2 (16 V100s, fp16, 6 us per kernel); "
                 "top: best of one-shot and overlap; bottom: what layer-wise overlap buys", fontsize=11)
    save(fig, os.path.join(out, "klenk-training.png"))
    write_table(os.path.join(out, "klenk-training-summary.csv"),
                ["model", "compute", "sub_batch", "sub_batch_tokens_or_samples", "push_oneshot_us",
                 "push_overlap_us", "ring_oneshot_us", "ring_overlap_us", "compute_us",
                 "ring_oneshot_comm_share", "speedup_best_of_both"], table)


# --------------------------------------------------------------------------
# MultiTree Fig. 11

MULTITREE_MODELS = ["alexnet", "alphagozero", "fasterrcnn", "googlenet", "ncf", "resnet50", "transformer-base"]
# The figure's bars in its order; the ring and MultiTree are needed, the
# others (multitree-training-bars.yaml) drawn where they ran.
MULTITREE_BARS = ["ring", "ring2d", "dbtree", "multitree", "multitree-msg"]
# The summary's speed-ups: column -> (the slower algorithm, the faster,
# overlapped, the measure compared).
MULTITREE_RATIOS = {
    "allreduce_speedup": ("ring", "multitree", False, "comm_us"),
    "train_speedup_oneshot": ("ring", "multitree", False, "time_us"),
    "train_speedup_overlap": ("ring", "multitree", True, "time_us"),
    "allreduce_over_ring2d": ("ring2d", "multitree", False, "comm_us"),
    "msg_allreduce_speedup": ("ring", "multitree-msg", False, "comm_us"),
    "dbtree_allreduce_speedup": ("ring", "dbtree", False, "comm_us"),
    "ring2d_allreduce_speedup": ("ring", "ring2d", False, "comm_us"),
    "train_over_ring2d_oneshot": ("ring2d", "multitree", False, "time_us"),
    "train_over_ring2d_overlap": ("ring2d", "multitree", True, "time_us"),
    "msg_allreduce_over_ring2d": ("ring2d", "multitree-msg", False, "comm_us"),
    "msg_over_multitree": ("multitree", "multitree-msg", False, "comm_us"),
}
MULTITREE_COLORS = {"ring": "#444444", "ring2d": "#2ca02c", "dbtree": "#9467bd", "multitree": "#1f77b4",
                    "multitree-msg": "#17becf"}


def multitree(rows, out, ref):
    plt = _plt()
    # A SCALE-Sim topology file (scalesim/v1/alexnet.csv) is its model.
    for r in rows:
        if r["model"].endswith(".csv"):
            r["model"] = os.path.splitext(os.path.basename(r["model"]))[0]
    runs = _runs(rows, ("model", OVERLAP))
    models = [m for m in MULTITREE_MODELS
              if all((m, o, a) in runs for o in (False, True) for a in ("ring", "multitree"))]
    if not models:
        raise FigError("no model has both algorithms, one-shot and overlapped")

    def has(m, alg):
        return all((m, o, alg) in runs for o in (False, True))

    def ratio(m, over, alg, overlapped, col):
        """How much faster alg is than `over` in col ("" where either has not run)."""
        if not (has(m, over) and has(m, alg)):
            return ""
        return runs[(m, overlapped, over)][col] / runs[(m, overlapped, alg)][col]

    bars = [a for a in MULTITREE_BARS if any(has(m, a) for m in models)]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(18, 6.5))
    x = list(range(len(models)))
    w = 0.8 / len(bars)
    table = []
    print("MultiTree Fig. 11 (8x8 torus, 16 samples per accelerator, systolic accelerator):")
    for k, alg in enumerate(bars):
        ms = [i for i, m in enumerate(models) if has(m, alg)]
        xs = [i + (k - (len(bars) - 1) / 2) * w for i in ms]
        # (a) non-overlapped: compute + all-reduce, over the ring's iteration
        base = [runs[(models[i], False, "ring")]["time_us"] for i in ms]
        r0 = [runs[(models[i], False, alg)] for i in ms]
        comp = [r["compute_us"] / b for r, b in zip(r0, base)]
        comm = [r["comm_us"] / b for r, b in zip(r0, base)]
        ax.bar(xs, comp, w, color="#dddddd", edgecolor=MULTITREE_COLORS[alg], label="%s: compute" % alg)
        ax.bar(xs, comm, w, bottom=comp, color=MULTITREE_COLORS[alg], label="%s: all-reduce" % alg)
        # (b) overlapped: compute alone, overlapped, exposed communication
        base = [runs[(models[i], True, "ring")]["time_us"] for i in ms]
        rs = [runs[(models[i], True, alg)] for i in ms]
        hidden = [(r["comm_us"] - r["exposed_us"]) / b for r, b in zip(rs, base)]
        alone = [r["compute_us"] / b - h for r, b, h in zip(rs, base, hidden)]
        exposed = [r["exposed_us"] / b for r, b in zip(rs, base)]
        bx.bar(xs, alone, w, color="#dddddd", edgecolor=MULTITREE_COLORS[alg], label="%s: computation" % alg)
        bx.bar(xs, hidden, w, bottom=alone, color=MULTITREE_COLORS[alg], alpha=0.45, hatch="//",
               label="%s: overlapped" % alg)
        bx.bar(xs, exposed, w, bottom=[a + h for a, h in zip(alone, hidden)], color=MULTITREE_COLORS[alg],
               label="%s: communication" % alg)
        for i, xi in zip(ms, xs if alg != "ring" else []):
            ax.annotate("%.1f" % ratio(models[i], "ring", alg, False, "comm_us"), (xi, 1.0), ha="center",
                        va="bottom", fontsize=6)

    for m in models:
        ring0, mt0 = runs[(m, False, "ring")], runs[(m, False, "multitree")]
        ring1, mt1 = runs[(m, True, "ring")], runs[(m, True, "multitree")]
        t = {"model": m, "compute_us": ring0["compute_us"], "ring_allreduce_us": ring0["comm_us"],
             "multitree_allreduce_us": mt0["comm_us"], "ring_comm_share": ring0["comm_us"] / ring0["time_us"],
             "ring_oneshot_us": ring0["time_us"], "multitree_oneshot_us": mt0["time_us"],
             "ring_overlap_us": ring1["time_us"], "multitree_overlap_us": mt1["time_us"]}
        for col, (over, alg, o, measure) in MULTITREE_RATIOS.items():
            t[col] = ratio(m, over, alg, o, measure)
        table.append(t)
        print("  %-17s ring's all-reduce %4.0f%% of its iteration; all-reduce %.2fx; "
              "training %.2fx non-overlapped, %.2fx overlapped" % (
                  m, 100 * t["ring_comm_share"], t["allreduce_speedup"], t["train_speedup_oneshot"],
                  t["train_speedup_overlap"]))
        others = [a for a in bars if a not in ("ring", "multitree") and has(m, a)]
        if others:
            print("  %-17s all-reduce over the ring: %s" % ("", ", ".join(
                "%s %.2fx" % (a, ratio(m, "ring", a, False, "comm_us")) for a in others)))
    slowest = {}
    for m in models:
        ran = [a for a in bars if has(m, a)]
        if len(ran) == len(MULTITREE_BARS):
            slowest[m] = max(ran, key=lambda a: runs[(m, False, a)]["comm_us"])
    if slowest:
        print("  the slowest all-reduce (the paper: DBTree on every model): %s" % ", ".join(
            "%s %s" % (m, a) for m, a in slowest.items()))
    claim("mean all-reduce speed-up over the ring (Fig. 11a)", sum(t["allreduce_speedup"] for t in table) / len(table),
          ref["allreduce_mean_over_ring"], "x")
    for col, key, what in (("allreduce_over_ring2d", "allreduce_mean_over_ring2d",
                            "MultiTree's mean all-reduce speed-up over 2D-ring"),
                           ("msg_allreduce_speedup", "allreduce_msg_mean_over_ring",
                            "MultiTreeMsg's mean all-reduce speed-up over the ring"),
                           ("msg_allreduce_over_ring2d", "allreduce_msg_mean_over_ring2d",
                            "MultiTreeMsg's mean all-reduce speed-up over 2D-ring"),
                           ("msg_over_multitree", "msg_over_multitree",
                            "MultiTreeMsg's mean all-reduce speed-up over MultiTree")):
        have = [t[col] for t in table if t[col] != ""]
        if have:
            claim("%s (%d models)" % (what, len(have)), sum(have) / len(have), ref[key], "x")
    # §VI-C: "except for AlexNet, other DNNs have a considerable amount of
    # time on allreduce communication ... from 30%-88%".
    shares = [t["ring_comm_share"] for t in table if t["model"] != "alexnet"]
    print("  the ring's all-reduce share but AlexNet's: %.0f%% to %.0f%% (paper: %.0f%% to %.0f%%)" % (
        100 * min(shares), 100 * max(shares), 100 * ref["ring_comm_share_min"], 100 * ref["ring_comm_share_max"]))
    cnn = [m for m in models if m in ("alexnet", "fasterrcnn", "googlenet", "resnet50")]
    bound = [m for m in models if m in ("ncf", "transformer-base")]
    for group, name, k0, k1 in ((cnn, "compute-bound CNNs", "train_cnn_over_ring", "train_cnn_overlap_over_ring"),
                                (bound, "communication-bound models", "train_commbound_over_ring",
                                 "train_commbound_overlap_over_ring")):
        if group:
            for col, k, how in (("train_speedup_oneshot", k0, "non-overlapped"),
                                ("train_speedup_overlap", k1, "overlapped")):
                claim("%s: largest training speed-up, %s" % (name, how),
                      max(t[col] for t in table if t["model"] in group), ref[k], "x")
    for group, name, col, key in ((cnn, "compute-bound CNNs", "train_over_ring2d_oneshot", "train_cnn_over_ring2d"),
                                  (bound, "communication-bound models", "train_over_ring2d_oneshot",
                                   "train_commbound_over_ring2d"),
                                  (bound, "communication-bound models, overlapped", "train_over_ring2d_overlap",
                                   "train_commbound_overlap_over_ring2d")):
        have = [t[col] for t in table if t["model"] in group and t[col] != ""]
        if have:
            claim("%s: largest training speed-up over 2D-ring" % name, max(have), ref[key], "x")
    for a, title in ((ax, "(a) non-overlapped: computation and all-reduce, over the ring's iteration "
                          "(all-reduce speed-up over the ring above)"),
                     (bx, "(b) layer-wise overlapped: computation, overlap, communication, over the ring's")):
        a.set_xticks(x)
        a.set_xticklabels(models, fontsize=8)
        a.set_ylabel("time / ring's iteration")
        a.set_title(title, fontsize=9)
        a.axhline(1.0, color="black", lw=0.6)
        a.grid(True, axis="y", alpha=0.3)
        a.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=5)
    fig.suptitle("MultiTree Fig. 11: one training iteration on the 8x8 torus, bars in the paper's order "
                 "(%s)" % ", ".join(bars), fontsize=11)
    save(fig, os.path.join(out, "multitree-training.png"))
    columns = ["model", "compute_us", "ring_allreduce_us", "multitree_allreduce_us", "allreduce_speedup",
               "ring_comm_share", "ring_oneshot_us", "multitree_oneshot_us", "train_speedup_oneshot",
               "ring_overlap_us", "multitree_overlap_us", "train_speedup_overlap",
               "allreduce_over_ring2d", "msg_allreduce_speedup", "dbtree_allreduce_speedup",
               "ring2d_allreduce_speedup", "train_over_ring2d_oneshot", "train_over_ring2d_overlap",
               "msg_allreduce_over_ring2d", "msg_over_multitree"]
    write_table(os.path.join(out, "multitree-training-summary.csv"), columns,
                [[t[c] for c in columns] for t in table])


# --------------------------------------------------------------------------
# Blink Fig. 17 and 19(a)

BLINK_MODELS = ["alexnet", "resnet18", "resnet50", "vgg16"]
BLINK_COLORS = {"alexnet": "#1f77b4", "resnet18": "#2ca02c", "resnet50": "#ff7f0e", "vgg16": "#9467bd"}


def _alloc_key(gpus):
    g = [int(v) for v in str(gpus).replace("/", ",").split(",")]
    return (len(g), g)


def blink(rows, out, ref):
    plt = _plt()
    runs = _runs(rows, ("model", "gpus", OVERLAP))
    allocs = sorted({k[1] for k in runs}, key=_alloc_key)
    single = [a for a in allocs if "/" not in str(a)]
    multi = [a for a in allocs if "/" in str(a)]
    fig, axes = plt.subplots(1, 2, figsize=(16, 5.5), gridspec_kw={"width_ratios": [max(len(single), 1), 1.6]})
    table = []
    print("Blink Fig. 17 and 19(a) (iteration-time reduction of Blink over the ring):")
    for ax, group, title in ((axes[0], single, "Fig. 17: one DGX-1V, allocations of 3 to 8 GPUs"),
                             (axes[1], multi, "Fig. 19(a): two DGX-1V, 3 + 5 GPUs, 40 Gbps")):
        if not group:
            ax.set_visible(False)
            continue
        models = [m for m in BLINK_MODELS if any((m, a, o, "ring") in runs for a in group for o in (True, False))]
        w = 0.8 / (2 * len(models))
        for k, m in enumerate(models):
            for j, o in enumerate((True, False)):
                xs, ys = [], []
                for i, a in enumerate(group):
                    if (m, a, o, "blink") not in runs or (m, a, o, "ring") not in runs:
                        continue
                    b, r = runs[(m, a, o, "blink")], runs[(m, a, o, "ring")]
                    cut = 1 - b["time_us"] / r["time_us"]
                    xs.append(i + (2 * k + j - len(models) + 0.5) * w)
                    ys.append(100 * cut)
                    table.append([m, a, "overlapped" if o else "one-shot", r["compute_us"], r["comm_us"],
                                  b["comm_us"], r["time_us"], b["time_us"], cut, 1 - b["comm_us"] / r["comm_us"]])
                ax.bar(xs, ys, w, color=BLINK_COLORS[m], hatch=None if o else "//",
                       alpha=1.0 if o else 0.55,
                       label="%s, %s" % (m, "25 MiB buckets overlapped" if o else "one-shot"))
        ax.set_xticks(range(len(group)))
        ax.set_xticklabels(group, fontsize=8, rotation=30)
        ax.set_ylabel("iteration time reduction, Blink over ring (%)")
        ax.axhline(0, color="black", lw=0.6)
        key = "train_cut_max_single" if group is single else "train_cut_max_multi"
        ax.axhline(100 * ref[key], color="gray", ls=":", label="paper: up to %g%%" % (100 * ref[key]))
        if group is single:
            ax.axhline(100 * ref["train_cut_geo_single"], color="gray", ls="--", lw=0.8,
                       label="paper: geometric mean %g%%" % (100 * ref["train_cut_geo_single"]))
        ax.set_title(title, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=6.5, ncol=2 if group is single else 1)
    for mode in ("overlapped", "one-shot"):
        one = [t for t in table if t[2] == mode and "/" not in str(t[1])]
        two = [t for t in table if t[2] == mode and "/" in str(t[1])]
        if one:
            print(" one server, %s:" % mode)
            best = max(one, key=lambda t: t[8])
            claim("largest iteration-time reduction (%s, %s)" % (best[0], best[1]), 100 * best[8],
                  100 * ref["train_cut_max_single"], " %")
            claim("geometric-mean iteration-time reduction", 100 * (1 - _geo([1 - t[8] for t in one])),
                  100 * ref["train_cut_geo_single"], " %")
            best = max(one, key=lambda t: t[9])
            claim("largest communication-time reduction (%s, %s)" % (best[0], best[1]), 100 * best[9],
                  100 * ref["comm_cut_max_single"], " %")
            claim("geometric-mean communication-time reduction", 100 * (1 - _geo([1 - t[9] for t in one])),
                  100 * ref["comm_cut_geo_single"], " %")
        if two:
            print(" two servers, %s:" % mode)
            for t in two:
                print("  %-8s iteration %.1f%% shorter, communication %.0f%% shorter" % (t[0], 100 * t[8], 100 * t[9]))
            claim("largest iteration-time reduction", 100 * max(t[8] for t in two),
                  100 * ref["train_cut_max_multi"], " %")
    fig.suptitle("Blink Fig. 17 and 19(a): data-parallel training on DGX-1V (V100 roofline, fp32), Blink vs ring; "
                 "solid: PyTorch DDP's 25 MiB buckets overlapped, hatched: one all-reduce after the backward pass",
                 fontsize=10)
    save(fig, os.path.join(out, "blink-training.png"))
    write_table(os.path.join(out, "blink-training-summary.csv"),
                ["model", "gpus", "mode", "compute_us", "ring_comm_us", "blink_comm_us", "ring_us", "blink_us",
                 "iteration_cut", "comm_cut"], table)


# --------------------------------------------------------------------------
# NetReduce Tables 7 and 9, Fig. 11A

NR_MODELS = ["alexnet", "vgg16", "resnet50"]
# (case, platform, compute, algorithms (the baseline last), title, reference prefix)
NR_CASES = [("t7", "rack", "v100", ["netreduce", "ring"], "Table 7: 4 machines of 1 V100 (Testbed 2)"),
            ("t9", "multigpu", "v100", ["pnetreduce", "tencent", "flatring"], "Table 9: 4 machines of 8 V100s (Testbed 2)"),
            ("f11", "rack", "rtx2080", ["netreduce", "ring"], "Fig. 11A: 6 machines of 1 RTX 2080 (Testbed 1)")]
NR_REF = {"netreduce": "nr", "ring": "ring", "pnetreduce": "pn", "tencent": "ta", "flatring": "fr"}
NR_COLORS = {"netreduce": "#d62728", "pnetreduce": "#d62728", "ring": "#444444", "flatring": "#444444",
             "tencent": "#1f77b4"}


def _nr_paper_ratio(ref, case, model, algorithm):
    """The paper's training speed of `algorithm` over its case's baseline
    (the ring, the flat ring), or None where it gives none."""
    if case == "f11":
        return ref["f11_alexnet_nr_over_rar"] if model == "alexnet" and algorithm == "netreduce" else None
    if case == "t7":
        return ref["t7_%s_speedup" % model] + 1
    pn_fr = ref["t9_%s_pn_over_fr" % model] + 1
    return pn_fr if algorithm == "pnetreduce" else pn_fr / (ref["t9_%s_pn_over_ta" % model] + 1)


def netreduce(rows, out, ref):
    plt = _plt()
    # The overlapped runs (the figures'); Table 7's one-shot ones (train.overlap
    # false) say what the overlap hides.
    runs, oneshot = {}, {}
    for r in rows:
        k = (r["platform"], r.get("compute", ""), r["model"], r["algorithm"])
        mine = runs if _overlapped(r) else oneshot
        if k in mine:
            raise FigError("two rows for %s" % (k,))
        mine[k] = r
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.5))
    table = []
    print("NetReduce Tables 7, 9 and Fig. 11A (images/s per GPU, batch 32, fp16):")
    for ax, (case, platform, comp, algs, title) in zip(axes, NR_CASES):
        models = [m for m in NR_MODELS if all((platform, comp, m, a) in runs for a in algs)]
        if not models:
            ax.set_axis_off()
            ax.text(0.5, 0.5, "%s:\nnot run" % title, ha="center", va="center", transform=ax.transAxes)
            continue
        print(" %s:" % title)
        width = 0.8 / len(algs)
        for j, a in enumerate(algs):
            xs = [i + (j - (len(algs) - 1) / 2) * width for i in range(len(models))]
            ours = [32e6 / runs[(platform, comp, m, a)]["time_us"] for m in models]
            ax.bar(xs, ours, width * 0.9, color=NR_COLORS[a], label="incsim: %s" % a)
            theirs = [ref.get("%s_%s_%s_ips" % (case, m, NR_REF[a])) for m in models]
            if j < len(algs) - 1:  # its speed over the baseline's, and the paper's
                for x, m, y in zip(xs, models, ours):
                    mine = runs[(platform, comp, m, algs[-1])]["time_us"] / runs[(platform, comp, m, a)]["time_us"]
                    paper_x = _nr_paper_ratio(ref, case, m, a)
                    ax.text(x, y * 1.05, "%.2fx" % mine + ("\n(%.2fx)" % paper_x if paper_x else ""),
                            ha="center", va="bottom", fontsize=7)
            px = [x for x, v in zip(xs, theirs) if v is not None]
            if px:
                ax.scatter(px, [v for v in theirs if v is not None], marker="_", s=400, color="black", zorder=3,
                           label="paper" if j == 0 else None)
        base = algs[-1]
        for m in models:
            for overlap, rs in ((True, runs), (False, oneshot)):
                if not all((platform, comp, m, a) in rs for a in algs):
                    continue
                for a in algs:
                    r = rs[(platform, comp, m, a)]
                    ips = 32e6 / r["time_us"]
                    gain = rs[(platform, comp, m, base)]["time_us"] / r["time_us"] - 1
                    p_ips = ref.get("%s_%s_%s_ips" % (case, m, NR_REF[a]))
                    table.append([case, m, "true" if overlap else "false", a, r["time_us"] / 1e3,
                                  r["compute_us"] / 1e3, r["comm_us"] / 1e3, r["exposed_us"] / 1e3, ips,
                                  p_ips if p_ips is not None else "", gain if a != base else ""])
            first = runs[(platform, comp, m, algs[0])]
            for a in algs[1:]:
                gain = runs[(platform, comp, m, a)]["time_us"] / first["time_us"] - 1
                key = {"t7": "t7_%s_speedup" % m, "t9": "t9_%s_pn_over_%s" % (m, NR_REF[a])}.get(case)
                # Speed ratios (images/s of one over the other's), the paper's gains + 1.
                if case == "f11" and m == "alexnet":
                    claim("%s %s: %s / %s training speed" % (case, m, algs[0], a), gain + 1,
                          ref["f11_alexnet_nr_over_rar"], "x")
                elif key in ref:
                    claim("%s %s: %s / %s training speed" % (case, m, algs[0], a), gain + 1, ref[key] + 1, "x")
                else:
                    print("  %-58s ours %8.3gx" % ("%s %s: %s / %s training speed" % (case, m, algs[0], a),
                                                    gain + 1))
            if case == "t7":
                for a in algs:
                    r = runs[(platform, comp, m, a)]
                    claim("t7 %s %s: iteration (ms)" % (m, a), r["time_us"] / 1e3,
                          ref["t7_%s_%s_iter_ms" % (m, NR_REF[a])])
                    claim("t7 %s %s: communication, exposed (ms)" % (m, a), r["exposed_us"] / 1e3,
                          ref["t7_%s_%s_comm_ms" % (m, NR_REF[a])])
                    p = ref["t7_%s_%s_iter_ms" % (m, NR_REF[a])] - ref["t7_%s_%s_comm_ms" % (m, NR_REF[a])]
                    claim("t7 %s %s: compute (ms; paper: iteration - communication)" % (m, a),
                          r["compute_us"] / 1e3, p)
                if all((platform, comp, m, a) in oneshot for a in algs):
                    gain = (oneshot[(platform, comp, m, base)]["time_us"] /
                            oneshot[(platform, comp, m, algs[0])]["time_us"] - 1)
                    claim("t7 %s: %s / %s training speed, one-shot (train.overlap=false)" % (m, algs[0], base),
                          gain + 1, ref["t7_%s_speedup" % m] + 1, "x")
        ax.set_xticks(range(len(models)))
        ax.set_xticklabels(models)
        ax.set_ylabel("images/s per GPU")
        ax.set_yscale("log")
        ax.set_ylim(top=ax.get_ylim()[1] * 2.5)  # room for the ratios and the legend
        ax.set_title(title, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("NetReduce Tables 7 and 9, Fig. 11A: data-parallel training, batch 32 per GPU, fp16, "
                 "25 MiB buckets overlapped; bars incsim (roofline compute), black marks the paper; above a bar its speed "
                 "over the last bar's (the paper's in brackets)", fontsize=10)
    save(fig, os.path.join(out, "netreduce-training.png"))
    write_table(os.path.join(out, "netreduce-training-summary.csv"),
                ["case", "model", "overlap", "algorithm", "iteration_ms", "compute_ms", "comm_ms", "exposed_ms",
                 "images_per_s", "paper_images_per_s", "gain_over_baseline"], table)


FIGS = {"klenk": klenk, "multitree": multitree, "blink": blink, "netreduce": netreduce}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in FIGS:
        name = argv[0]
        figs = {"training": lambda rows, out, args: FIGS[name](rows, out, paper(name))}
        return figure_main(__doc__, name, figs, ["training"] + argv[1:])
    sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
    return 0 if argv and argv[0] in ("-h", "--help") else 2


if __name__ == "__main__":
    sys.exit(main())
