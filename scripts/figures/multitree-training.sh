#!/bin/sh
# MultiTree (Huang et al., ISCA 2021) §VI-C, Fig. 11: one training
# iteration on the 8x8 torus, 16 samples per accelerator, the systolic
# accelerator, non-overlapped and layer-wise overlapped, the figure's five
# all-reduces: the ring and MultiTree (multitree-training.yaml), 2D-ring,
# DBTree and MultiTreeMsg (multitree-training-bars.yaml). By default NCF,
# GoogLeNet, FasterRCNN and ResNet-50 (about an hour of CPU, measured);
# FULL=1 adds AlphaGoZero, SCALE-Sim's AlexNet and Transformer
# (multitree-full-training{,-bars}.yaml, about two hours more). Resumable;
# writes docs/figures/multitree-training.{csv,png} and
# multitree-training-summary.csv. Set INCSIM to use another binary (nothing
# is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
csvs=""
for set in multitree-training multitree-training-bars multitree-full-training multitree-full-training-bars; do
  case "$set:${FULL:-}" in
    *full*:) ;;  # FULL=1 runs them; their results so far are plotted
    *) scripts/sweep run "scripts/figures/$set.yaml" -j "${JOBS:-2}" || status=$? ;;
  esac
  csvs="$csvs --csv scripts/campaigns/results/$set/results.csv"
done
# shellcheck disable=SC2086 # one --csv per set, those that exist
scripts/figures/plot-training.py multitree $csvs --out docs/figures || status=$?
exit $status
