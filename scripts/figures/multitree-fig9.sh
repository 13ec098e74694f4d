#!/bin/sh
# MultiTree (Huang et al., ISCA 2021) Fig. 9: all-reduce bandwidth against
# size, 32 KiB to 64 MiB (16 MiB on the 64-node networks), on 4x4 and 8x8
# torus and mesh, 16- and 64-node fat tree, 4x8 and 4x16 BiGraph, for every
# algorithm on the same NIC. Runs scripts/campaigns/multitree-fig9-*.yaml
# (resumable) and writes docs/figures/multitree-fig9.{csv,png}. About 40
# minutes with JOBS=2. Set INCSIM to use another binary (nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
csvs=""
for p in torus mesh fattree bigraph; do
  scripts/sweep run scripts/campaigns/multitree-fig9-$p.yaml -j "${JOBS:-2}" || status=$?
  csvs="$csvs --csv scripts/campaigns/results/multitree-fig9-$p/results.csv"
done
# shellcheck disable=SC2086
scripts/figures/multitree-plot.py fig9 $csvs --out docs/figures || status=$?
exit $status
