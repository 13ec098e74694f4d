#!/bin/bash
# Synthetic traffic (docs/traffic.md): packet latency and accepted
# throughput against offered load for the five patterns on the 8x8 torus
# and the 8x8 mesh (MultiTree Table III links), as Dally and Towles ch. 23
# and BookSim plot them. Writes docs/figures/traffic.csv (every row, with
# the analytical zero-load latency and channel-load bound of its run),
# traffic-latency.png and traffic-throughput.png. About 3 minutes with
# JOBS=2. Set INCSIM to use another simulator binary (then nothing is built).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
incsim=${INCSIM:-build/incsim}
out=docs/figures
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Fine steps where the patterns saturate (0.06 to 0.25 of the endpoint
# link), coarser above; LOADS=... overrides (a quick look: LOADS=0.05,0.2).
loads=${LOADS:-0.01:0.3:0.01,0.35:0.5:0.05}
patterns="uniform transpose bitcomp hotspot neighbor"
export INCSIM_BIN=$incsim LOADS=$loads WORK=$work
for platform in torus mesh; do
  for p in $patterns; do
    echo "$platform $p"
  done
done | xargs -P "${JOBS:-2}" -n 2 sh -c \
  '"$INCSIM_BIN" --platform "$0" --dims 8x8 --traffic "$1" --load "$LOADS" --quiet --json "$WORK/$0-$1.json" >/dev/null'

/usr/bin/python3 - "$work" "$out" <<'PY'
import csv, glob, json, os, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

work, out = sys.argv[1], sys.argv[2]
runs = {}
for f in sorted(glob.glob(os.path.join(work, "*.json"))):
    j = json.load(open(f))
    runs[(j["config"]["platform"], j["config"]["traffic"])] = j
fields = ["platform", "dims", "pattern", "offered", "offered_measured", "accepted", "accepted_min",
          "accepted_GBps_per_node", "latency_ns", "p50_ns", "p99_ns", "max_ns", "network_latency_ns",
          "packets", "wrong",
          "refused", "saturated", "zero_load_ns", "bound_saturation", "bound_channel", "injection_GBps"]
with open(os.path.join(out, "traffic.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(fields)
    for (platform, pattern), j in sorted(runs.items()):
        for r in j["rows"]:
            w.writerow([platform, j["config"]["dims"], pattern, r["offered"], round(r["offered_measured"], 5),
                        round(r["accepted"], 5), round(r["accepted_min"], 5), round(r["accepted_GBps_per_node"], 3),
                        round(r["latency_ns"], 1), round(r["p50_ns"], 1), round(r["p99_ns"], 1),
                        round(r["max_ns"], 1), round(r["network_latency_ns"], 1), r["packets"], r["wrong"],
                        r["refused"], r["saturated"],
                        round(j["zero_load_latency_ns"]["mean"], 1), round(j["channel_load_bound"]["saturation"], 5),
                        j["channel_load_bound"]["bottleneck"], j["injection_GBps"]])

order = ["uniform", "transpose", "bitcomp", "hotspot", "neighbor"]
colors = dict(zip(order, ["C0", "C1", "C2", "C3", "C4"]))
platforms = [p for p in ["torus", "mesh"] if any(k[0] == p for k in runs)]

def figure(name, draw, finish):
    """One panel per platform; draw(ax, pattern, run) per pattern, finish(ax, platform)."""
    fig, axes = plt.subplots(1, len(platforms), figsize=(6 * len(platforms), 4.5), squeeze=False)
    for ax, platform in zip(axes[0], platforms):
        for pattern in order:
            if (platform, pattern) in runs:
                draw(ax, pattern, runs[(platform, pattern)])
        finish(ax, platform)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=120)


def latency(ax, pattern, j):
    # Up to the first saturated point: beyond it latency only measures the run's length.
    xs, ys = [], []
    for r in j["rows"]:
        xs.append(r["offered"]); ys.append(r["latency_ns"])
        if r["saturated"]:
            break
    ax.plot(xs, ys, "o-", ms=3, color=colors[pattern], label=pattern)
    ax.axvline(j["channel_load_bound"]["saturation"], color=colors[pattern], ls=":", lw=1)
    ax.axhline(j["zero_load_latency_ns"]["mean"], color=colors[pattern], ls="--", lw=0.6)


def latency_axes(ax, platform):
    inj = next(j for k, j in runs.items() if k[0] == platform)["injection_GBps"]
    ax.set_xlabel(f"offered load (fraction of {inj:g} GB/s per endpoint)")
    ax.set_ylabel("mean packet latency (ns)")
    ax.set_ylim(0, 4000)
    ax.set_xlim(0, 0.5)
    ax.set_title(f"{platform} 8x8: latency vs offered load\n(dotted: channel-load bound; dashed: zero-load latency)",
                 fontsize=9)


def accepted(ax, pattern, j):
    ax.plot([r["offered"] for r in j["rows"]], [r["accepted"] for r in j["rows"]], "o-", ms=3,
            color=colors[pattern], label=pattern)
    ax.axhline(j["channel_load_bound"]["saturation"], color=colors[pattern], ls=":", lw=1)


def accepted_axes(ax, platform):
    ax.plot([0, 0.5], [0, 0.5], color="grey", lw=0.5)
    ax.set_xlabel("offered load (fraction)")
    ax.set_ylabel("accepted throughput (fraction, mean over endpoints)")
    ax.set_title(f"{platform} 8x8: accepted vs offered (dotted: channel-load bound)", fontsize=9)


figure("traffic-latency.png", latency, latency_axes)
figure("traffic-throughput.png", accepted, accepted_axes)
PY
echo "wrote $out/traffic.csv, $out/traffic-latency.png, $out/traffic-throughput.png"
