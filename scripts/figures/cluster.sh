#!/bin/sh
# The cluster figures of docs/modern-machines.md: all-reduce busbw on 2 and
# 4 HGX H100 nodes, NCCL's rings and trees across the nodes, the
# hierarchical ring, NVLS inside the nodes with trees (NVLSTree) or rings
# across, and SHARP in the rails' leaves across with NVLS (nvlssharp) or
# rings (collnet) inside, 64 KiB to 64 MiB, NCCL's protocol by size (NVLS
# and CollNet: Simple). Runs scripts/campaigns/cluster-allreduce.yaml
# (resumable) and writes docs/figures/cluster-allreduce-{2,4}nodes.png and
# the CSV.
set -eu
cd "$(dirname "$0")/../.."
sh scripts/build.sh >/dev/null
scripts/sweep run scripts/campaigns/cluster-allreduce.yaml -j "${JOBS:-2}"
csv=scripts/campaigns/results/cluster-allreduce/results.csv
cp "$csv" docs/figures/cluster-allreduce.csv
for n in 2 4; do
  scripts/plot "$csv" --kind bw --metric busbw --series algorithm --where nodes=$n \
    --title "All-reduce on $n HGX H100 nodes over 400 Gb/s InfiniBand rails" -o docs/figures/cluster-allreduce-${n}nodes.png
done
