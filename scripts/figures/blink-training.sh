#!/bin/sh
# Blink (Wang et al., MLSys 2020) §5.3, Fig. 17 and 19(a): the iteration
# time of data-parallel AlexNet, ResNet-18, ResNet-50 and VGG-16 with
# Blink's all-reduce against the ring's, on DGX-1V allocations of 3 to 8
# GPUs (one per count; FULL=1 adds a second) and on two DGX-1V servers with
# 3 + 5 GPUs over 40 Gbps, with and without overlap: 22 minutes of CPU,
# measured (FULL=1: about 15 more). Runs
# scripts/figures/blink{,-full,-multiserver}-training.yaml (resumable) and
# writes docs/figures/blink-training.{csv,png} and
# blink-training-summary.csv. Set INCSIM to use another binary (nothing is
# built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
campaigns="blink-training blink-multiserver-training"
[ -z "${FULL:-}" ] || campaigns="$campaigns blink-full-training"
csvs=""
for c in $campaigns; do
  scripts/sweep run scripts/figures/$c.yaml -j "${JOBS:-2}" || status=$?
  csvs="$csvs --csv scripts/campaigns/results/$c/results.csv"
done
# shellcheck disable=SC2086
scripts/figures/plot-training.py blink $csvs --out docs/figures || status=$?
exit $status
