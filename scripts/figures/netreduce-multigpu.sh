#!/bin/sh
# NetReduce (Liu et al., ASPLOS 2023) §3.4, Fig. 7: flat ring, Tencent
# all-reduce and Parallel NetReduce on multi-GPU machines beside the
# appendix's Eq. (1)-(3), against the tensor size (P = 32), the GPU count
# (P = 32 to 1024) and the per-hop latency alpha; checks condition (6).
# Runs scripts/campaigns/netreduce-multigpu-{size,gpus,alpha}.yaml
# (resumable) and writes docs/figures/netreduce-multigpu.{csv,png}. The
# 1024-GPU points take up to 4.9 GB each: keep JOBS at 2 on 24 GB. About
# 22 minutes with JOBS=2. Set INCSIM to use another binary (nothing is
# built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
csvs=""
for s in size gpus alpha; do
  scripts/sweep run scripts/campaigns/netreduce-multigpu-$s.yaml -j "${JOBS:-2}" || status=$?
  csvs="$csvs --csv scripts/campaigns/results/netreduce-multigpu-$s/results.csv"
done
# shellcheck disable=SC2086
scripts/figures/netreduce-plot.py multigpu $csvs --out docs/figures || status=$?
exit $status
