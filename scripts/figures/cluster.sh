#!/bin/sh
# The cluster figure of docs/modern-machines.md: all-reduce busbw on 2 and 4
# HGX H100 nodes, NCCL's rings and trees across the nodes, the hierarchical
# ring, and NVLS inside the nodes with trees (NVLSTree) or rings across,
# 64 KiB to 64 MiB, NCCL's protocol by size (NVLS: Simple). Runs scripts/campaigns/cluster-allreduce.yaml
# (resumable) and writes docs/figures/cluster-allreduce.png and its CSV.
set -eu
cd "$(dirname "$0")/../.."
sh scripts/build.sh >/dev/null
scripts/sweep run scripts/campaigns/cluster-allreduce.yaml -j "${JOBS:-2}"
csv=scripts/campaigns/results/cluster-allreduce/results.csv
cp "$csv" docs/figures/cluster-allreduce.csv
scripts/plot "$csv" --kind bw --metric busbw --series nodes,algorithm \
  --title "All-reduce on HGX H100 nodes over 400 Gb/s InfiniBand rails" -o docs/figures/cluster-allreduce.png
