#!/bin/sh
# Klenk et al., ISCA 2020, Fig. 9: reduction table size sensitivity on a
# DGX-2 without wave synchronisation, push and pull, 128 B to 16 KiB per
# port, 64 KiB to 16 MiB, beside the Little's-law C_min of Eq. (1)/(2)
# that incsim prints in its "# table sizing" line.
# Runs scripts/campaigns/klenk-fig9.yaml (resumable) and writes
# docs/figures/klenk-fig9.{csv,png}, klenk-fig9-tables.csv and
# klenk-fig9-sizing.csv. About 5 minutes with JOBS=2. Set INCSIM to use
# another simulator binary (then nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
scripts/sweep run scripts/campaigns/klenk-fig9.yaml -j "${JOBS:-2}" || status=$?
scripts/figures/klenk-plot.py fig9 \
  --csv scripts/campaigns/results/klenk-fig9/results.csv --out docs/figures || status=$?
exit $status
