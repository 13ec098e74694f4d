#!/bin/sh
# How much NVLS with SHARP across 2 HGX H100 nodes depends on SHARP's two
# unpublished numbers, the hosts' credits and the aggregation ALU's rate:
# runs scripts/campaigns/cluster-sharp.yaml (resumable, about 6 minutes of
# CPU) and writes docs/figures/cluster-sharp.csv and cluster-sharp.png
# (busbw at 16 MiB).
set -eu
cd "$(dirname "$0")/../.."
sh scripts/build.sh >/dev/null
scripts/sweep run scripts/campaigns/cluster-sharp.yaml -j "${JOBS:-2}"
csv=scripts/campaigns/results/cluster-sharp/results.csv
cp "$csv" docs/figures/cluster-sharp.csv
scripts/plot "$csv" --kind heatmap --metric busbw --x ib.sharp.credits --y ib.sharp.alu_GBps --size 16M \
  --title "nvlssharp on 2 HGX H100 nodes, 16 MiB: busbw" \
  -o docs/figures/cluster-sharp.png
