#!/bin/sh
# MultiTree (Huang et al., ISCA 2021) Fig. 10: weak scaling on the 2D torus,
# 375 x N KiB over N = 16 to 144 nodes for ring, 2D ring and MultiTreeMsg;
# with LARGE=1 also 196 and 256 nodes (about an hour more on 2 cores).
# Runs scripts/campaigns/multitree-fig10*.yaml (resumable) and writes
# docs/figures/multitree-fig10.{csv,png}. Set INCSIM to use another binary.
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
scripts/sweep run scripts/campaigns/multitree-fig10.yaml -j "${JOBS:-2}" || status=$?
if [ -n "${LARGE:-}" ]; then
  scripts/sweep run scripts/campaigns/multitree-fig10-large.yaml -j "${JOBS:-2}" || status=$?
fi
scripts/figures/multitree-plot.py fig10 --csv scripts/campaigns/results/multitree-fig10/results.csv \
  --csv scripts/campaigns/results/multitree-fig10-large/results.csv --out docs/figures || status=$?
exit $status
