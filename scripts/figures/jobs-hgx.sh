#!/bin/sh
# docs/jobs.md's HGX H100 table: two NVLS all-reduce jobs of 4 GPUs each
# sharing the board's four NVSwitches (their multicast regions and
# reduction tables), each against itself alone, beside one NVLS job of all
# 8 GPUs and two ring jobs of 4 (software, the same GPUs). Writes
# docs/figures/jobs-hgx.csv. About 3 minutes of CPU.
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || { sh scripts/build.sh >/dev/null; INCSIM=build/incsim; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
sizes=${SIZES:-1M,16M,64M}
for algorithm in nvls ring; do
  cat >"$out/run.yaml" <<YAML
platform: hgx-h100
sizes: $sizes
nccl.launch: none
net.max_payload_bytes: 256
jobs:
  - {name: j, placement: contiguous, gpus: 4, algorithm: $algorithm, repeat: 2}
YAML
  "$INCSIM" --config "$out/run.yaml" --quiet --csv "$out/$algorithm-2x4.csv" >/dev/null
done
"$INCSIM" --platform hgx-h100 --algorithm nvls --sizes "$sizes" -c nccl.launch=none -c net.max_payload_bytes=256 --quiet --csv "$out/nvls-1x8.csv" >/dev/null
/usr/bin/python3 - "$out" docs/figures/jobs-hgx.csv <<'PY'
import csv, os, sys
src, dst = sys.argv[1:3]
cols = ["setup", "job", "size_bytes", "time_us", "busbw_GBps", "alone_us", "slowdown", "wrong"]
rows = []
for name in ("nvls-2x4", "ring-2x4", "nvls-1x8"):
    for r in csv.DictReader(open(os.path.join(src, name + ".csv"))):
        rows.append({c: r.get(c, "") for c in cols} | {"setup": name, "job": r.get("job", "-")})
with open(dst, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    w.writerows(rows)
print("wrote %s (%d rows)" % (dst, len(rows)))
for r in rows:
    print("%-9s %-4s %9s %9.2f us %7.1f GB/s slowdown %s wrong %s" % (
        r["setup"], r["job"], r["size_bytes"], float(r["time_us"]), float(r["busbw_GBps"]),
        r["slowdown"] or "-", r["wrong"]))
sys.exit(1 if any(r["wrong"] != "0" for r in rows) else 0)
PY
