#!/bin/sh
# NetReduce (Liu et al., ASPLOS 2023) on the 6-host rack: Table 6, goodput
# against the window N and MsgLen (§3.2) and against the link loss rate.
# Runs scripts/campaigns/netreduce-{table6,window,loss}.yaml (resumable)
# and writes docs/figures/netreduce-{table6,window,loss}.csv and
# netreduce-sensitivity.png. About a minute with JOBS=2. Set INCSIM to use
# another binary (nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
csvs=""
for s in table6 window loss; do
  scripts/sweep run scripts/campaigns/netreduce-$s.yaml -j "${JOBS:-2}" || status=$?
  csvs="$csvs --csv scripts/campaigns/results/netreduce-$s/results.csv"
done
# shellcheck disable=SC2086
scripts/figures/netreduce-plot.py sensitivity $csvs --out docs/figures || status=$?
exit $status
