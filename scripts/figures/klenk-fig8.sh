#!/bin/sh
# Klenk et al., ISCA 2020, Fig. 8: push and pull all-reduce on the 2-level
# fat tree with 64 GPUs (8 KiB to 16 MiB) and 128 GPUs (8 KiB to 8 MiB),
# with the paper's table and wave settings (incsim's defaults there).
# Runs scripts/campaigns/klenk-fig8.yaml (resumable) and writes
# docs/figures/klenk-fig8.{csv,png}. About 10 minutes with JOBS=2. Set
# INCSIM to use another simulator binary (then nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
scripts/sweep run scripts/campaigns/klenk-fig8.yaml -j "${JOBS:-2}" || status=$?
scripts/figures/klenk-plot.py fig8 \
  --csv scripts/campaigns/results/klenk-fig8/results.csv --out docs/figures || status=$?
exit $status
