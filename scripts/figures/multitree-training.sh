#!/bin/sh
# MultiTree (Huang et al., ISCA 2021) §VI-C, Fig. 11: one training
# iteration on the 8x8 torus, 16 samples per accelerator, the systolic
# accelerator, non-overlapped and layer-wise overlapped, MultiTree's
# all-reduce against the ring. By default NCF, GoogLeNet, FasterRCNN and
# ResNet-50 (23 minutes of CPU, measured); FULL=1 adds AlphaGoZero, AlexNet and
# Transformer (about an hour more). Runs
# scripts/figures/multitree{,-full}-training.yaml (resumable) and writes
# docs/figures/multitree-training.{csv,png} and multitree-training-summary.csv.
# Set INCSIM to use another binary (nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
scripts/sweep run scripts/figures/multitree-training.yaml -j "${JOBS:-2}" || status=$?
if [ -n "${FULL:-}" ]; then
  scripts/sweep run scripts/figures/multitree-full-training.yaml -j "${JOBS:-2}" || status=$?
fi
scripts/figures/plot-training.py multitree --csv scripts/campaigns/results/multitree-training/results.csv \
  --csv scripts/campaigns/results/multitree-full-training/results.csv --out docs/figures || status=$?
exit $status
