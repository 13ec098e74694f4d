#!/bin/sh
# NetReduce (Liu et al., ASPLOS 2023) §5.3 and §5.4: data-parallel training
# on NetReduce's Ethernet machines, batch 32 per GPU, fp16, one iteration:
# Table 7 (rack of 4 V100 hosts, NetReduce and the ring), Table 9 (4
# machines of 8 V100s: Parallel NetReduce, Tencent's all-reduce, the flat
# ring) and Fig. 11A (rack of 6 RTX 2080 hosts), AlexNet, VGG-16 and
# ResNet-50 each. Fig. 11B's BERT and GPT-2 are not run (the paper gives
# neither their size nor batch nor sequence). Runs
# scripts/figures/netreduce-training-{table7,table9,fig11}.yaml (resumable)
# and writes docs/figures/netreduce-training.{csv,png} and
# netreduce-training-summary.csv. Set INCSIM to use another binary (nothing
# is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
for c in table7 fig11; do
  scripts/sweep run scripts/figures/netreduce-training-$c.yaml -j "${JOBS:-2}" || status=$?
done
# One at a time: a 32-GPU VGG-16 run holds every GPU's 196 MiB bucket (fc6) several times over.
scripts/sweep run scripts/figures/netreduce-training-table9.yaml -j 1 || status=$?
scripts/figures/plot-training.py netreduce --csv scripts/campaigns/results/netreduce-training-table7/results.csv \
  --csv scripts/campaigns/results/netreduce-training-table9/results.csv \
  --csv scripts/campaigns/results/netreduce-training-fig11/results.csv --out docs/figures || status=$?
exit $status
