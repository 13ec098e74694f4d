#!/usr/bin/python3
"""Figures of Liu et al., "In-Network Aggregation with Transport
Transparency for Distributed Training" (NetReduce, ASPLOS 2023), from the
campaign CSVs of scripts/campaigns/netreduce-*.yaml. Called by
scripts/figures/netreduce-sensitivity.sh and netreduce-multigpu.sh; see
docs/netreduce.md.

  netreduce-plot.py sensitivity --csv TABLE6.csv --csv WINDOW.csv --csv LOSS.csv --out docs/figures
  netreduce-plot.py multigpu --csv SIZE.csv --csv GPUS.csv --csv ALPHA.csv --out docs/figures

sensitivity writes docs/figures/netreduce-table6.csv (Table 6 beside the
paper), netreduce-window.csv, netreduce-loss.csv and
netreduce-sensitivity.png (goodput against the window and the loss rate).
multigpu writes netreduce-multigpu.csv (flat ring, Tencent all-reduce and
Parallel NetReduce simulated beside the appendix's Eq. (1), (2) and (3), and
condition (6), for each sweep of Fig. 7 / Fig. 19) and netreduce-multigpu.png.
A row with wrong elements (#wrong != 0) stops both with exit status 2.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from incsim_campaign.campaign import format_size  # noqa: E402
from incsim_campaign.figures import (FigError, _plt, _size_axis,  # noqa: E402
                                     figure_main, paper, save, write_rows)

# NetReduce Table 6 (6 hosts, N = 2, MsgLen 170, 1 KB packets), each number
# with its source: scripts/figures/reference/netreduce-table6.csv.
PAPER_T6 = paper("netreduce")
LINE_Bps = 12.5e9           # 100 GbE
FRAME_B = 1024 + 82         # a 1 KB payload and its Ethernet/IP/UDP/BTH/ICRC
LOSSES = [0, 0.0001, 0.001, 0.01]


def _refuse_wrong(rows):
    bad = [r for r in rows if r["wrong"] != 0]
    if bad:
        raise FigError("wrong elements (#wrong != 0) in %d of %d rows, first point %s; nothing written" % (
            len(bad), len(rows), bad[0]["point"]))


def _write(path, table):
    """The table's floats rounded to 4 decimals, as the CSVs always were."""
    write_rows(path, [{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in table],
               list(table[0]))


# --------------------------------------------------------------------------
# the 6-host rack: Table 6, window, loss

def _campaign(r):
    """Which sensitivity campaign a row comes from: the one setting it sweeps."""
    return "loss" if "link.loss" in r else "window" if "netreduce.window" in r else "table6"


def table6(rows):
    table = []
    for alg in ("netreduce", "ring"):
        rs = sorted((r for r in rows if r["algorithm"] == alg), key=lambda r: r["size_bytes"])
        if len(rs) < 2:
            raise FigError("Table 6 needs the %s runs at 1K and 64M" % alg)
        rtt, big = rs[0], rs[-1]
        paper = PAPER_T6 if alg == "netreduce" else {}
        table.append(dict(algorithm=alg, size_bytes=big["size_bytes"], time_us=big["time_us"],
                          throughput_Gbps=big["throughput_Gbps"], goodput_Gbps=big["goodput_Gbps"],
                          bound_Gbps=8 * big["size_bytes"] / big["bound_us"] / 1e3,
                          bound_fraction=big["bound_fraction"], latency_1KB_us=rtt["time_us"],
                          paper_throughput_Gbps=paper.get("throughput_Gbps", ""),
                          paper_goodput_Gbps=paper.get("goodput_Gbps", ""), paper_rtt_us=paper.get("rtt_us", "")))
    return table


def sensitivity(rows, out):
    _refuse_wrong(rows)
    t6 = table6([r for r in rows if _campaign(r) == "table6"])
    nr = t6[0]
    print("NetReduce Table 6 (6 hosts, 64 MiB): throughput %.1f Gbps (paper %.1f), goodput %.1f (paper %.1f), "
          "1 KB all-reduce %.2f us (paper RTT %.1f); ring goodput %.1f, NetReduce / ring %.2fx" % (
              nr["throughput_Gbps"], PAPER_T6["throughput_Gbps"], nr["goodput_Gbps"], PAPER_T6["goodput_Gbps"],
              nr["latency_1KB_us"], PAPER_T6["rtt_us"], t6[1]["goodput_Gbps"],
              nr["goodput_Gbps"] / t6[1]["goodput_Gbps"]))

    # §3.2: the window covers the round trip when N x MsgLen packets span it.
    bdp_packets = nr["latency_1KB_us"] * 1e-6 * LINE_Bps / FRAME_B
    window = [dict(msg_len=r["netreduce.msg_len"], window=r["netreduce.window"],
                   window_packets=r["netreduce.window"] * r["netreduce.msg_len"],
                   array_packets=2 * r["netreduce.window"] * r["netreduce.msg_len"],
                   array_KiB=2 * r["netreduce.window"] * r["netreduce.msg_len"] * r["hosts"],
                   goodput_Gbps=r["goodput_Gbps"], bound_fraction=r["bound_fraction"], bdp_packets=bdp_packets)
              for r in rows if _campaign(r) == "window"]
    loss = [dict(algorithm=r["algorithm"], loss=r["link.loss"], seed=r["seed"], goodput_Gbps=r["goodput_Gbps"],
                 throughput_Gbps=r["throughput_Gbps"], frames_lost=r["frames_lost"],
                 retransmitted_packets=r["retransmitted_packets"], timeouts=r["timeouts"],
                 first_lost_drops=r["first_lost_drops"], results_sent_again=r["results_sent_again"],
                 wrong=r["wrong"])
            for r in rows if _campaign(r) == "loss"]
    if not window or not loss:
        raise FigError("sensitivity needs the window and the loss campaigns' rows")
    _write(os.path.join(out, "netreduce-table6.csv"), t6)
    _write(os.path.join(out, "netreduce-window.csv"), window)
    _write(os.path.join(out, "netreduce-loss.csv"), loss)

    plt = _plt()
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    for msg_len in sorted({r["msg_len"] for r in window}):
        rs = sorted((r for r in window if r["msg_len"] == msg_len), key=lambda r: r["window"])
        ax[0].plot([r["window_packets"] for r in rs], [r["goodput_Gbps"] for r in rs], "o-",
                   label="MsgLen %d" % msg_len)
    ax[0].axvline(bdp_packets, color="grey", ls="--", label="RTT x PortRate = %.0f packets" % bdp_packets)
    ax[0].axhline(nr["bound_Gbps"], color="k", ls=":", label="line-rate payload bound")
    ax[0].set_xscale("log")
    ax[0].set_xlabel("window N x MsgLen (packets in flight per host; array = 2x this)")
    ax[0].set_ylabel("goodput per host (Gbps)")
    size = next(r["size_bytes"] for r in rows if _campaign(r) == "window")
    ax[0].set_title("NetReduce, 6 hosts, %sB: window (§3.2)" % format_size(size))
    ax[0].legend(fontsize=8)
    print("NetReduce goodput (Gbps) against the loss per link, mean of the seeds:")
    for alg, style in [("netreduce", "o-"), ("ring", "s--")]:
        means = []
        for p in LOSSES:
            rs = [r["goodput_Gbps"] for r in loss if r["algorithm"] == alg and r["loss"] == p]
            means.append(sum(rs) / len(rs))
        # loss 0 sits at the left edge of the log axis
        ax[1].plot([max(p, 3e-5) for p in LOSSES], means, style, label=alg)
        print("  %-9s %s" % (alg, ", ".join("%g: %.1f" % pm for pm in zip(LOSSES, means))))
    ax[1].set_xscale("log")
    ax[1].set_xticks([3e-5, 1e-4, 1e-3, 1e-2])
    ax[1].set_xticklabels(["0", "0.01%", "0.1%", "1%"])
    ax[1].set_xlabel("frame loss probability per link")
    ax[1].set_ylabel("goodput per host (Gbps, mean of 3 seeds)")
    ax[1].set_title("loss: go-back-N under in-network aggregation")
    ax[1].legend(fontsize=8)
    save(fig, os.path.join(out, "netreduce-sensitivity.png"))


# --------------------------------------------------------------------------
# multi-GPU machines: FR, TA, PN against Eq. (1)-(3)

# (algorithm, column prefix, label, the appendix's model, marker, colour)
ALGS = [("flatring", "fr", "FR", "eq1", "s", "C1"), ("tencent", "ta", "TA", "eq2", "^", "C2"),
        ("pnetreduce", "pn", "PN", "eq3", "o", "C0")]
# A configuration: (machines, GPUs per machine, M, B_intra, alpha). A sweep
# varies one of them with the others fixed: (name, its index in the
# configuration, its column in the table, axis label).
SWEEPS = [("M", 2, "M_bytes", "tensor size M (bytes)"), ("P", 0, "P", "GPUs P"),
          ("alpha", 4, "alpha_us", "per-hop latency alpha (us)")]


def _configs(rows):
    """{configuration: {algorithm: row}}. A configuration that two campaigns
    both ran is kept once, as first read (PN's time in a run of several sizes
    differs from a run of one size by under 0.02%)."""
    cfg = {}
    for r in rows:
        key = (r["machines"], r["gpus-per-machine"], r["size_bytes"], r["intra.bw_GBps"],
               round(r["alpha_us"], 3))
        cfg.setdefault(key, {}).setdefault(r["algorithm"], r)
    return cfg


def _sweeps(cfg):
    """(sweep, configurations) for every setting of the other four at which
    a sweep's variable takes more than one value, its configurations in order."""
    for name, i, _, _ in SWEEPS:
        groups = {}
        for key in cfg:
            groups.setdefault(key[:i] + key[i + 1:], []).append(key)
        for _, keys in sorted(groups.items()):
            if len(keys) > 1:
                yield name, sorted(keys, key=lambda k: k[i])


def _table_row(sweep, key, algs):
    machines, n, m, b_intra, alpha = key
    p = machines * n
    row = dict(sweep=sweep, machines=machines, gpus_per_machine=n, P=p, M_bytes=m, B_intra_GBps=b_intra,
               alpha_us=alpha)
    for alg, pre, _, eq, _, _ in ALGS:
        r = algs[alg]
        row.update({pre + "_sim_us": r["time_us"], "%s_%s_us" % (pre, eq): r["model_us"],
                    pre + "_rel_diff": r["time_us"] / r["model_us"] - 1})
    # condition (6) on the payload rates the models use
    r = algs["pnetreduce"]
    row["condition6"] = r["B_intra_payload_GBps"] / r["B_inter_payload_GBps"] >= 2 * p / (p - 2)
    row["pn_beats_fr_sim"] = row["pn_sim_us"] < row["fr_sim_us"]
    row["pn_beats_ta_sim"] = row["pn_sim_us"] < row["ta_sim_us"]
    return row


def multigpu(rows, out):
    _refuse_wrong(rows)
    cfg = _configs(rows)
    panels = []
    for sweep, keys in _sweeps(cfg):
        complete = [k for k in keys if len(cfg[k]) == len(ALGS)]
        for k in sorted(set(keys) - set(complete)):
            print("incomplete: %s sweep, machines %d x %d, %s, B_intra %g, alpha %g: only %s" % (
                sweep, k[0], k[1], format_size(k[2]), k[3], k[4], ", ".join(sorted(cfg[k]))))
        if len(complete) > 1:
            panels.append((sweep, [_table_row(sweep, k, cfg[k]) for k in complete]))
    if not panels:
        raise FigError("no sweep has two complete configurations")
    _write(os.path.join(out, "netreduce-multigpu.csv"), [r for _, table in panels for r in table])

    plt = _plt()
    cols = 4
    nrows = (len(panels) + cols) // cols      # one more axis for the legend
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 4.2 * nrows), squeeze=False)
    axes = [a for line in axes for a in line]
    print("NetReduce multi-GPU (simulated / model - 1; PN = Parallel NetReduce, FR flat ring, TA Tencent):")
    for ax, (sweep, table) in zip(axes, panels):
        _panel(ax, sweep, table)
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[len(panels):]:
        ax.axis("off")
    axes[len(panels)].legend(handles, labels, loc="center", fontsize=10,
                             title="simulated solid, the appendix's model dotted")
    save(fig, os.path.join(out, "netreduce-multigpu.png"))


def _panel(ax, sweep, table):
    _, _, x, xlabel = next(s for s in SWEEPS if s[0] == sweep)
    xs = [r[x] for r in table]
    for alg, pre, label, eq, marker, color in ALGS:
        ax.plot(xs, [r[pre + "_sim_us"] for r in table], marker=marker, ls="-", color=color,
                label="%s simulated" % label)
        ax.plot(xs, [r["%s_%s_us" % (pre, eq)] for r in table], marker=marker, ls=":", color=color, mfc="none",
                label="%s Eq. (%s)" % (label, eq[-1]))
    if sweep == "M":
        _size_axis(ax, xs)
    else:
        ax.set_xscale("log", base=2 if sweep == "P" else 10)
        ax.set_xticks(xs)
        ax.set_xticklabels(["%g" % v for v in xs])
        ax.minorticks_off()
    ax.set_xlabel(xlabel)
    ax.set_yscale("log")
    ax.set_ylabel("all-reduce time (us)")
    ax.grid(True, alpha=0.3)
    r0 = table[0]
    fixed = {"M": "P = %d" % r0["P"], "P": "M = %s" % format_size(r0["M_bytes"]),
             "alpha": "P = %d, M = %s" % (r0["P"], format_size(r0["M_bytes"]))}[sweep]
    if sweep != "alpha":
        fixed += ", alpha %.1f us" % r0["alpha_us"]
    holds = {r["condition6"] for r in table}
    cond = "(6) holds" if holds == {True} else "(6) fails" if holds == {False} else "(6) holds in part"
    title = "vs %s: n = %d, %s, B_intra %g GB/s" % (sweep, r0["gpus_per_machine"], fixed, r0["B_intra_GBps"])
    ax.set_title("%s\ncondition %s" % (title, cond), fontsize=9)
    print("  %s; %s" % (title, cond))
    for _, pre, label, _, _, _ in ALGS:
        d = [100 * r[pre + "_rel_diff"] for r in table]
        print("    %s %+.1f%% to %+.1f%%" % (label, min(d), max(d)))
    for other in ("fr", "ta"):
        lose = [r[x] for r in table if not r["pn_beats_%s_sim" % other]]
        print("    PN slower than %s at %s = %s" % (other.upper(), sweep, ", ".join(
            (format_size(v) if sweep == "M" else "%g" % v) for v in lose) or "none"))


def main(argv=None):
    figs = {"sensitivity": lambda rows, out, args: sensitivity(rows, out),
            "multigpu": lambda rows, out, args: multigpu(rows, out)}
    return figure_main(__doc__, "netreduce", figs, argv, rows_csv=False)


if __name__ == "__main__":
    sys.exit(main())
