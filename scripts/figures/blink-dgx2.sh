#!/bin/sh
# Blink (Wang et al., MLSys 2020) Fig. 27: DGX-2 all-reduce latency, 1 KiB to
# 16 MiB, Blink's one-hop trees vs NCCL's ring and double binary tree and vs
# MultiTree. Runs scripts/campaigns/blink-dgx2.yaml (resumable) and writes
# docs/figures/blink-dgx2{.csv,.png,-summary.csv}. About 5 minutes with
# JOBS=2. Set INCSIM to use another binary (nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
scripts/sweep run scripts/campaigns/blink-dgx2.yaml -j "${JOBS:-2}" || status=$?
scripts/figures/blink-plot.py dgx2 --csv scripts/campaigns/results/blink-dgx2/results.csv --out docs/figures ||
  status=$?
exit $status
