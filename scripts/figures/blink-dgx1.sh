#!/bin/sh
# Blink (Wang et al., MLSys 2020) Fig. 14 and 16: broadcast and all-reduce
# throughput, Blink vs NCCL-style rings, for the 46 unique allocations of
# 3-8 GPUs on DGX-1V and the 14 on DGX-1P, at 32 MiB. Runs
# scripts/campaigns/blink-dgx1{v,p}.yaml (resumable) and writes
# docs/figures/blink-dgx1{.csv,.png,-summary.csv}. About 10 minutes with
# JOBS=2. Set INCSIM to use another binary (nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
csvs=""
for s in dgx1v dgx1p; do
  scripts/sweep run scripts/campaigns/blink-$s.yaml -j "${JOBS:-2}" || status=$?
  csvs="$csvs --csv scripts/campaigns/results/blink-$s/results.csv"
done
# shellcheck disable=SC2086
scripts/figures/blink-plot.py dgx1 $csvs --out docs/figures || status=$?
exit $status
