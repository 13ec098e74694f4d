#!/bin/sh
# The figure of docs/modern-machines.md, "NVLS as NCCL runs it": NVLS
# all-reduce busbw against the GPU count (2 to 8 of one HGX H100) at 1, 16
# and 64 MiB, on the cores (the default, as NCCL runs it) and on the copy
# engines (-c nvls.engine=copy), with each run's bound. Runs
# scripts/campaigns/nvls-gpus.yaml (resumable) and writes
# docs/figures/nvls-gpus.csv and nvls-gpus.png, and the Little's-law need
# the header prints for each GPU count, docs/figures/nvls-gpus-need.csv.
set -eu
cd "$(dirname "$0")/../.."
sh scripts/build.sh >/dev/null
scripts/sweep run scripts/campaigns/nvls-gpus.yaml -j "${JOBS:-2}"
csv=scripts/campaigns/results/nvls-gpus/results.csv
cp "$csv" docs/figures/nvls-gpus.csv
# The header's table sizing line: Eq. (1)'s C_min, the bytes a GPU's pulls
# must keep in flight to stream at B_in (Little's law).
{
  echo "gpus,pull_cmin_bytes_per_gpu"
  for g in 2 3 4 5 6 7 8; do
    build/incsim --platform hgx-h100 --gpus $g --algorithm nvls -c nvls.engine=copy --sizes 4 |
      sed -n "s/.*pull C_min = \([0-9]*\) B per GPU.*/$g,\1/p"
  done
} >docs/figures/nvls-gpus-need.csv
/usr/bin/python3 - docs/figures/nvls-gpus.csv docs/figures/nvls-gpus.png <<'PY'
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open(sys.argv[1])))
sizes = sorted({int(r["size_bytes"]) for r in rows})
fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 3.6), sharey=True)
for ax, size in zip(axes, sizes):
    for engine, style in (("cores", "o-"), ("copy", "s--")):
        pts = sorted((int(r["gpus"]), float(r["busbw_GBps"]), float(r["busbw_GBps"]) / float(r["bound_fraction"]))
                     for r in rows if int(r["size_bytes"]) == size and r["nvls.engine"] == engine)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=engine + (" (default)" if engine == "cores" else ""))
        if engine == "cores":
            ax.plot([p[0] for p in pts], [p[2] for p in pts], ":", color="gray", label="bound (both engines)")
    ax.set_title("%d MiB" % (size >> 20))
    ax.set_xlabel("GPUs")
    ax.grid(alpha=0.3)
axes[0].set_ylabel("busbw (GB/s)")
axes[0].legend(fontsize=8)
fig.suptitle("NVLS all-reduce on HGX H100: cores against copy engines")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=120)
PY
