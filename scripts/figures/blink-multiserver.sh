#!/bin/sh
# Blink (Wang et al., MLSys 2020) Fig. 19(b): two DGX-1V servers (3 + 5
# GPUs), all-reduce throughput against the cross-server bandwidth, Blink's
# three-phase protocol vs an NCCL-style ring. Runs
# scripts/campaigns/blink-multiserver.yaml (resumable) and writes
# docs/figures/blink-multiserver{.csv,.png}. About a minute with JOBS=2.
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
scripts/sweep run scripts/campaigns/blink-multiserver.yaml -j "${JOBS:-2}" || status=$?
scripts/figures/blink-plot.py multiserver --csv scripts/campaigns/results/blink-multiserver/results.csv \
  --out docs/figures || status=$?
exit $status
