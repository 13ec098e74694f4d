#!/bin/sh
# Klenk et al. (ISCA 2020) §VI-E, Fig. 11: training speed-up of push over
# the ring on DGX-2 against the sub-batch, the best of one-shot and
# layer-wise overlap, Volta and the 4x projection. By default a subset
# (ResNet-50 at 8 and 64 images on both GPUs, Transformer at 1280 tokens on
# Volta: 26 minutes of CPU, measured); FULL=1 adds the rest (Transformer from
# 320 to 10240 tokens, BERT, more ResNet-50 sub-batches: some 7 hours).
# Runs scripts/figures/klenk{,-full}-training.yaml (resumable) and writes
# docs/figures/klenk-training.{csv,png} and klenk-training-summary.csv.
# Set INCSIM to use another binary (nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
scripts/sweep run scripts/figures/klenk-training.yaml -j "${JOBS:-2}" || status=$?
if [ -n "${FULL:-}" ]; then
  scripts/sweep run scripts/figures/klenk-full-training.yaml -j "${JOBS:-2}" || status=$?
fi
scripts/figures/plot-training.py klenk --csv scripts/campaigns/results/klenk-training/results.csv \
  --csv scripts/campaigns/results/klenk-full-training/results.csv --out docs/figures || status=$?
exit $status
