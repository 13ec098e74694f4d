#!/bin/sh
# Klenk et al., ISCA 2020, §VI-D: mean packet latency of an 8 MiB
# all-reduce on a DGX-2, push and pull, with wave synchronisation (the
# Fig. 7 settings) and without (gpu.copy_engine.waves=0); the paper: about
# 90 % lower with waves. Runs scripts/campaigns/klenk-latency.yaml
# (resumable, 3 seeds) and writes docs/figures/klenk-latency.{csv,png} and
# klenk-latency-summary.csv. About 1 minute with JOBS=2. Set INCSIM to use
# another simulator binary (then nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
scripts/sweep run scripts/campaigns/klenk-latency.yaml -j "${JOBS:-2}" || status=$?
scripts/figures/klenk-plot.py latency \
  --csv scripts/campaigns/results/klenk-latency/results.csv --out docs/figures || status=$?
exit $status
