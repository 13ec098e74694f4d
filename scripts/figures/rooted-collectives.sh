#!/bin/sh
# docs/collectives.md's figure: reduce, gather and scatter busbw against
# size on DGX-2 (16 GPUs), the two-level fat tree (128) and the 8x8 torus,
# each against its bound (dashed). Runs the campaign
# scripts/campaigns/rooted-collectives{,-torus}.yaml (resumable; about 6
# minutes of CPU) and writes their CSVs to docs/figures/ and one PNG per
# platform, rooted-collectives-PLATFORM.png.
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
status=0
for c in rooted-collectives rooted-collectives-torus; do
  scripts/sweep run "scripts/campaigns/$c.yaml" -j "${JOBS:-2}" || status=$?
  cp "scripts/campaigns/results/$c/results.csv" "docs/figures/$c.csv"
done
for p in dgx2:16:rooted-collectives fattree2l:128:rooted-collectives torus:64:rooted-collectives-torus; do
  name=${p%%:*} rest=${p#*:}
  scripts/plot "docs/figures/${rest#*:}.csv" --kind bw --metric busbw --series collective --where platform="$name" \
    --title "Reduce, gather and scatter on $name (${rest%%:*} GPUs)" -o "docs/figures/rooted-collectives-$name.png"
done
exit $status
