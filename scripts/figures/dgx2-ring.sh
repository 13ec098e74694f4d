#!/bin/sh
# The figure of docs/validation.md: ring all-reduce, reduce-scatter and
# all-gather on DGX-2, busbw against the analytical bound, 8 KiB to 64 MiB.
# Runs the campaign scripts/campaigns/dgx2-ring-collectives.yaml (resumable)
# and writes docs/figures/dgx2-ring-busbw.png and its CSV.
set -eu
cd "$(dirname "$0")/../.."
sh scripts/build.sh >/dev/null
scripts/sweep run scripts/campaigns/dgx2-ring-collectives.yaml -j "${JOBS:-2}"
csv=scripts/campaigns/results/dgx2-ring-collectives/results.csv
cp "$csv" docs/figures/dgx2-ring.csv
scripts/plot "$csv" --kind bw --metric busbw --series collective \
  --title "Ring collectives on DGX-2 (16 GPUs)" -o docs/figures/dgx2-ring-busbw.png
