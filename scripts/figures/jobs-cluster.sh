#!/bin/sh
# The cluster figure of docs/jobs.md: 4 nvlssharp all-reduce jobs of 4
# nodes each on a 16-node cluster (HGX H100 nodes; every rail one leaf, so
# the 4 jobs share every leaf's SHARP aggregation tables), each job's
# slowdown against running alone and its time together, by SHARP buffer per
# switch port (ib.sharp.table_bytes) and the buffers' sharing policy
# (ib.sharp.policy: shared; partitioned with equal weights and with weights
# 5:1:1:1; quota 0.5 per job), every job with fallback: software; ring jobs
# on the same GPUs beside them as the software reference.
# Writes docs/figures/jobs-cluster.{csv,png}. About 9 minutes (30 s a run).
set -eu
cd "$(dirname "$0")/../.."
sh scripts/build.sh >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
size=1M
# The hardware alone, as docs/jobs.md measures it.
hw='nccl.launch: none\nnet.max_payload_bytes: 256\n'
n=4
# Job k's GPUs: every GPU of nodes 4k to 4k+3 (8 GPUs a node).
jobs() {  # $1: the algorithm; $2: job a's extra keys; $3: the others'
  k=0
  for name in a b c d; do
    extra=$3
    [ "$k" = 0 ] && extra=$2
    echo "  - {name: $name, gpus: $((32 * k))-$((32 * k + 31)), algorithm: $1, fallback: software$extra}"
    k=$((k + 1))
  done
}
for policy in shared partitioned weighted quota; do
  key=$policy a="" others=""
  case $policy in
    weighted) key=partitioned a=", weight: 5" ;;
    quota) a=", quota: 0.5" others=", quota: 0.5" ;;
  esac
  for bytes in 65536 131072 262144 524288; do
    {
      printf 'platform: cluster\nnodes: 16\nsizes: %s\n%bib.sharp.table_bytes: %s\nib.sharp.policy: %s\njobs:\n' \
        "$size" "$hw" "$bytes" "$key"
      jobs nvlssharp "$a" "$others"
    } >"$out/run.yaml"
    build/incsim --config "$out/run.yaml" --quiet --csv "$out/nvlssharp-$n-$policy-$bytes.csv" \
      >"$out/nvlssharp-$n-$policy-$bytes.txt"
  done
done
{
  printf 'platform: cluster\nnodes: 16\nsizes: %s\n%bjobs:\n' "$size" "$hw"
  jobs ring "" "" | sed 's/, fallback: software//'
} >"$out/run.yaml"
build/incsim --config "$out/run.yaml" --quiet --csv "$out/ring-$n.csv" >"$out/ring-$n.txt"
/usr/bin/python3 scripts/figures/jobs-figure.py "$out" docs/figures/jobs-cluster.csv docs/figures/jobs-cluster.png \
  "16-node cluster, {n} nvlssharp jobs of 4 nodes, 1 MiB" "SHARP buffer per switch port, ib.sharp.table_bytes (B)"
