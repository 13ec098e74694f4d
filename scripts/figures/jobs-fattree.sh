#!/bin/sh
# docs/jobs.md's fat-tree figure: the 128-GPU two-level fat tree (Klenk
# §V's, fattree2l) shared by 8 jobs of 16 GPUs each, placed at random (a
# scheduler's leftovers), all running the same all-reduce at once: ring
# (software), push and pull (Klenk's in-network reductions, the platform's
# default tables and waves), over 10 placements (seeds 1, 11, ..., 91: a
# repeated job's copy k draws with seed + k - 1, so the placements share
# no draw). Each job's slowdown is its time together over its time alone on
# the same GPUs. Writes docs/figures/jobs-fattree.{csv,png}. About 30
# minutes of CPU at 1 MiB; JOBS=2 runs two at once; SIZE and SEEDS change it.
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || { sh scripts/build.sh >/dev/null; INCSIM=build/incsim; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 INCSIM out
size=${SIZE:-1M}
for algorithm in ring push pull; do
  for seed in ${SEEDS:-1 11 21 31 41 51 61 71 81 91}; do
    cat >"$out/$algorithm-$seed.yaml" <<YAML
platform: fattree2l
sizes: $size
jobs:
  - {name: j, placement: random, seed: $seed, gpus: 16, algorithm: $algorithm, repeat: 8}
YAML
    echo "$algorithm-$seed"
  done
done | xargs -P "${JOBS:-1}" -I{} sh -c '"$INCSIM" --config "$out/{}.yaml" --quiet --csv "$out/{}.csv" >"$out/{}.txt"'
/usr/bin/python3 scripts/figures/jobs-slowdowns.py "$out" docs/figures/jobs-fattree.csv docs/figures/jobs-fattree.png \
  "fattree2l, 128 GPUs: 8 jobs of 16 placed at random, $size all-reduce, 10 placements"
