#!/bin/sh
# Klenk et al., ISCA 2020, Fig. 7: all-reduce on a DGX-2 (16 GPUs), 8 KiB to
# 64 MiB: ring, pull with and without the barrier, push; (a) algorithm
# bandwidth, (b) speedup over ring with the paper's 1x and 2x lines.
# Runs scripts/campaigns/klenk-fig7.yaml and klenk-fig7-pull.yaml
# (resumable, 3 seeds) and writes docs/figures/klenk-fig7.{csv,png} and
# klenk-fig7-speedup.csv. About 3 minutes with JOBS=2. Set INCSIM to use
# another simulator binary (then nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
scripts/sweep run scripts/campaigns/klenk-fig7.yaml -j "${JOBS:-2}" || status=$?
scripts/sweep run scripts/campaigns/klenk-fig7-pull.yaml -j "${JOBS:-2}" || status=$?
r=scripts/campaigns/results
scripts/figures/klenk-plot.py fig7 --csv $r/klenk-fig7/results.csv \
  --csv $r/klenk-fig7-pull/results.csv --out docs/figures || status=$?
exit $status
