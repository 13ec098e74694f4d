#!/bin/sh
# Blink Fig. 14/16 at the paper's size: four DGX-1V allocations at 32 MiB
# (the campaigns' size) and 500 MB (the paper's, §5.1), broadcast and
# all-reduce, Blink against the ring. Runs
# scripts/campaigns/blink-dgx1v-sizes.yaml (resumable) and writes
# docs/figures/blink-sizes.csv. About 10 minutes with JOBS=2. Set INCSIM to
# use another binary (nothing is built).
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
scripts/sweep run scripts/campaigns/blink-dgx1v-sizes.yaml -j "${JOBS:-2}"
/usr/bin/python3 - scripts/campaigns/results/blink-dgx1v-sizes/results.csv docs/figures/blink-sizes.csv <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bw = {}
for r in rows:
    bw[(r["gpus"], r["collective"], int(r["size_bytes"]), r["algorithm"])] = float(r["algbw_GBps"])
keys = sorted({k[:3] for k in bw}, key=lambda k: (k[1], len(k[0]), k[0], k[2]))
with open(sys.argv[2], "w") as o:
    o.write("gpus,collective,size_bytes,blink_GBps,ring_GBps,ratio\n")
    print(f"{'gpus':<18} {'collective':<10} {'size':>10} {'blink':>8} {'ring':>8} {'ratio':>6}")
    for g, c, s in keys:
        b, r = bw.get((g, c, s, "blink")), bw.get((g, c, s, "ring"))
        if b is None or r is None:
            continue
        print(f"{g:<18} {c:<10} {s:>10} {b:8.2f} {r:8.2f} {b / r:6.2f}")
        o.write(f"\"{g}\",{c},{s},{b:.3f},{r:.3f},{b / r:.4f}\n")
PY
