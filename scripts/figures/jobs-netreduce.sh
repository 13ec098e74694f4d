#!/bin/sh
# docs/jobs.md's NetReduce rack: 2 rings of 3 hosts and 3 rings of 2 on the
# rack's one FPGA, each ring's goodput at 4 MiB against the FPGA's
# aggregator memory (fpga.aggregator.bytes, up to the XCVU190's 17.4 MB of
# BRAM) under each policy: shared (first come, first served, in list
# order), partitioned (equal weights) and quota (each ring at most 1.5/k of
# the memory: the quotas oversubscribe it by half). A ring given less than its 2N x MsgLen aggregators runs a
# shorter MsgLen; one given less than 2N x 1 runs the host ring instead
# (fallback: software). Writes docs/figures/jobs-netreduce.csv. About a
# minute of CPU.
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || { sh scripts/build.sh >/dev/null; INCSIM=build/incsim; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
for k in 2 3; do
  per=$((6 / k))
  for policy in shared partitioned quota; do
    for bytes in 250000 500000 1000000 2000000 4000000 8000000 17418240; do
      {
        echo "platform: rack"
        echo "sizes: 4M"
        echo "fpga.aggregator.bytes: $bytes"
        echo "fpga.aggregator.policy: $policy"
        echo "jobs:"
        j=0
        while [ $j -lt $k ]; do
          printf '  - {name: r%d, gpus: %d-%d, fallback: software%s}\n' $((j + 1)) $((j * per)) \
            $((j * per + per - 1)) "$([ "$policy" = quota ] && echo ", quota: $(awk "BEGIN { printf \"%.4f\", 1.5 / $k }")")"
          j=$((j + 1))
        done
      } >"$out/run.yaml"
      "$INCSIM" --config "$out/run.yaml" --quiet --csv "$out/$k-$policy-$bytes.csv" >/dev/null
    done
  done
done
/usr/bin/python3 - "$out" docs/figures/jobs-netreduce.csv <<'PY'
import csv, glob, os, sys
src, dst = sys.argv[1:3]
cols = ["rings", "policy", "aggregator_bytes", "job", "algorithm", "msg_len", "ring_bytes", "time_us",
        "goodput_Gbps", "alone_us", "slowdown", "wrong"]
rows = []
for path in sorted(glob.glob(os.path.join(src, "*.csv"))):
    k, policy, total = os.path.basename(path)[:-4].split("-")
    for r in csv.DictReader(open(path)):
        rows.append({"rings": k, "policy": policy, "aggregator_bytes": total, "job": r["job"],
                     "algorithm": "netreduce" if r.get("aggregator.msg_len") else "ring",
                     "msg_len": r.get("aggregator.msg_len", ""), "ring_bytes": r.get("aggregator.bytes", ""),
                     "time_us": r["time_us"], "goodput_Gbps": r["goodput_Gbps"], "alone_us": r["alone_us"],
                     "slowdown": r["slowdown"], "wrong": r["wrong"]})
rows.sort(key=lambda r: (int(r["rings"]), r["policy"], int(r["aggregator_bytes"]), r["job"]))
with open(dst, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    w.writerows(rows)
print("wrote %s (%d rows)" % (dst, len(rows)))
for r in rows:
    print("%s rings %-11s %8s B %s %-9s MsgLen %3s %7.2f Gbps slowdown %s wrong %s" % (
        r["rings"], r["policy"], r["aggregator_bytes"], r["job"], r["algorithm"], r["msg_len"] or "-",
        float(r["goodput_Gbps"]), r["slowdown"], r["wrong"]))
sys.exit(1 if any(r["wrong"] != "0" for r in rows) else 0)
PY
