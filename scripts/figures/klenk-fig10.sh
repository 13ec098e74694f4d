#!/bin/sh
# Klenk et al., ISCA 2020, Fig. 10: 1 to 64 waves outstanding on the fat
# tree, push with 256 B/port and pull with 1 KiB/port. 64 GPUs (the paper:
# 128) and 8 KiB to 8 MiB, to stay within about 15 minutes on 2 cores.
# Runs scripts/campaigns/klenk-fig10.yaml (resumable) and writes
# docs/figures/klenk-fig10.{csv,png} and klenk-fig10-waves.csv. About 10
# minutes with JOBS=2. Set INCSIM to use another simulator binary (then
# nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
scripts/sweep run scripts/campaigns/klenk-fig10.yaml -j "${JOBS:-2}" || status=$?
scripts/figures/klenk-plot.py fig10 \
  --csv scripts/campaigns/results/klenk-fig10/results.csv --out docs/figures || status=$?
exit $status
