#!/bin/sh
# The figure of docs/jobs.md: push all-reduce jobs sharing DGX-2's switches,
# each job's slowdown against running alone, by reduction table size and the
# tables' sharing policy; ring jobs on the same GPUs beside them as the
# software reference. 2 jobs of 8 GPUs and 4 jobs of 4, spread over both
# baseboards (placement: spread), so every job's blocks meet in every switch.
# Writes docs/figures/jobs-dgx2.{csv,png}. About 2 minutes.
set -eu
cd "$(dirname "$0")/../.."
sh scripts/build.sh >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
size=1M
for n in 2 4; do
  gpus=$((16 / n))
  # quota: each job at most half of every table, so the quotas of n jobs add up to n/2 tables.
  for policy in shared partitioned quota; do
    share=""
    [ "$policy" = quota ] && share=", quota: 0.5"
    for bytes in 256 512 1024 2048; do
      cat >"$out/run.yaml" <<YAML
platform: dgx2
sizes: $size
switch.reduction_table.bytes: $bytes
switch.reduction_table.policy: $policy
jobs:
  - {name: j, placement: spread, gpus: $gpus, algorithm: push, repeat: $n, fallback: software$share}
YAML
      build/incsim --config "$out/run.yaml" --quiet --csv "$out/push-$n-$policy-$bytes.csv" >"$out/push-$n-$policy-$bytes.txt"
    done
  done
  cat >"$out/run.yaml" <<YAML
platform: dgx2
sizes: $size
jobs:
  - {name: j, placement: spread, gpus: $gpus, algorithm: ring, repeat: $n}
YAML
  build/incsim --config "$out/run.yaml" --quiet --csv "$out/ring-$n.csv" >"$out/ring-$n.txt"
done
/usr/bin/python3 scripts/figures/jobs-figure.py "$out" docs/figures/jobs-dgx2.csv docs/figures/jobs-dgx2.png
