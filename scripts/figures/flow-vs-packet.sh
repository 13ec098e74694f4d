#!/bin/sh
# --fidelity flow against packet level (docs/flow.md, "Cross-check"): runs
# both fidelities on each case below at each size, and prints every point's
# time and the flow's error, with the CPU seconds each took; writes
# docs/figures/flow-vs-packet.csv; then one training iteration of each
# TRAIN case, its time and communication, to flow-vs-packet-train.csv; then
# draws every point of both (flow-vs-packet-figure.py,
# docs/figures/flow-vs-packet.png). CASES, SIZES and TRAIN override the
# lists (one case a line: a label, then incsim's options; CASES= or TRAIN=
# runs none of those); APPEND=1 adds their rows to the CSVs' instead of
# replacing them. Set INCSIM to use another binary (nothing is built then).
# About 20 minutes with the defaults. FLOW_ONLY=1 instead reruns the flow
# column of every point the CSV has (flow-vs-packet-cases.txt names each
# case's options), keeping packet level's, and redraws: half a minute.
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
bin=${INCSIM:-build/incsim}
all_cases=scripts/figures/flow-vs-packet-cases.txt
if [ -n "${FLOW_ONLY:-}" ]; then
  /usr/bin/python3 scripts/figures/flow-rerun.py "$bin" "$all_cases" docs/figures/flow-vs-packet.csv
  exec /usr/bin/python3 scripts/figures/flow-vs-packet-figure.py
fi
sizes=${SIZES:-64K,1M,16M,64M}
cases=${CASES-"$(grep -v '^#' "$all_cases" | head -n 9)"}  # the first nine cases of every case's list
small_gpt="--model transformer -c transformer.layers=4 -c transformer.hidden=1024 -c transformer.heads=8 -c transformer.sequence=512 --batch 4"
train=${TRAIN-"dgx2-resnet50 --platform dgx2 --model resnet50
hgx-h100-resnet50-nvls --platform hgx-h100 --model resnet50 --algorithm nvls
dgx2-tp2-pp2 --platform dgx2 --gpus 8 --tp 2 --pp 2 $small_gpt
cluster2-tp8 --platform cluster --nodes 2 --tp 8 $small_gpt
cluster4-tp8-pp2 --platform cluster --nodes 4 --tp 8 --pp 2 $small_gpt"}
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
out=docs/figures/flow-vs-packet.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -z "$cases" ] || [ -n "${APPEND:-}" ] || echo "case,size_bytes,packet_us,flow_us,error,packet_cpu_s,flow_cpu_s" >"$out"
[ -z "$cases" ] || printf '%-30s %12s %12s %12s %9s %9s %9s\n' case size packet_us flow_us error pkt_cpu flow_cpu
echo "$cases" | while read -r label opts; do
  [ -n "$label" ] || continue
  for f in packet flow; do
    # shellcheck disable=SC2086
    /usr/bin/time -f %U -o "$tmp/$f.cpu" "$bin" $opts --sizes "$sizes" --fidelity $f --quiet --csv "$tmp/$f.csv" >/dev/null
  done
  /usr/bin/python3 scripts/figures/paired-rows.py "$label" "$tmp" "$out" packet flow
done

# Training: one iteration, no warm-up, at packet level, as flows alone
# (flow.share_links=false: each group's size run once) and as flows on one
# shared network (the default); the iteration's time and the collectives' (data
# parallel, tensor parallel, pipeline) summed, and the share of the first
# flows' collective time that began beside another group's collective on a
# link of theirs (which they do not share).
out=docs/figures/flow-vs-packet-train.csv
[ -z "$train" ] || [ -n "${APPEND:-}" ] || echo "case,packet_us,flow_us,error,packet_comm_us,flow_comm_us,comm_error,shared_time,shared_us,shared_error,shared_comm_us,shared_comm_error,packet_cpu_s,flow_cpu_s,shared_cpu_s" >"$out"
[ -z "$train" ] || printf '\n%-24s %11s %11s %8s %11s %8s %10s %10s %8s %10s %8s %7s %8s %6s %6s\n' case packet_us flow_us error shared_us error pkt_comm flow_comm error shr_comm error beside pkt_cpu flow shared
echo "$train" | while read -r label opts; do
  [ -n "$label" ] || continue
  for f in packet flow shared; do
    fidelity=$f extra=
    [ $f != flow ] || extra="-c flow.share_links=false"
    [ $f != shared ] || fidelity=flow
    # shellcheck disable=SC2086
    /usr/bin/time -f %U -o "$tmp/$f.cpu" "$bin" $opts $extra --iterations 1 --warmup 0 --fidelity $fidelity --quiet \
      --csv "$tmp/$f.csv" --json "$tmp/$f.json" >/dev/null
  done
  /usr/bin/python3 - "$label" "$tmp" "$out" <<'PY'
import csv, json, sys
label, tmp, out = sys.argv[1:4]
runs = ("packet", "flow", "shared")
# The share of the collectives' flow time that began beside another group's on a link of theirs.
beside = json.load(open(f"{tmp}/flow.json"))["rows"][0]["flow_overlap"]["shared_time"]
row = {f: next(csv.DictReader(open(f"{tmp}/{f}.csv"))) for f in runs}
cpu = {f: float(open(f"{tmp}/{f}.cpu").read().split()[-1]) for f in runs}
comm = {f: sum(float(r.get(k) or 0) for k in ("comm_us", "tp_comm_us", "p2p_us", "a2a_comm_us")) for f, r in row.items()}
t = {f: float(row[f]["time_us"]) for f in runs}
err = {f: t[f] / t["packet"] - 1 for f in runs}
cerr = {f: comm[f] / comm["packet"] - 1 for f in runs}
print(f"{label:<24} {t['packet']:11.1f} {t['flow']:11.1f} {100 * err['flow']:+7.2f}% {t['shared']:11.1f} "
      f"{100 * err['shared']:+7.2f}% {comm['packet']:10.1f} {comm['flow']:10.1f} {100 * cerr['flow']:+7.1f}% "
      f"{comm['shared']:10.1f} {100 * cerr['shared']:+7.1f}% {100 * beside:6.1f}% {cpu['packet']:8.2f} "
      f"{cpu['flow']:6.2f} {cpu['shared']:6.2f}")
with open(out, "a") as o:
    o.write(f"{label},{t['packet']:.1f},{t['flow']:.1f},{err['flow']:.4f},{comm['packet']:.1f},{comm['flow']:.1f},"
            f"{cerr['flow']:.4f},{beside:.4f},{t['shared']:.1f},{err['shared']:.4f},{comm['shared']:.1f},"
            f"{cerr['shared']:.4f},{cpu['packet']:.2f},{cpu['flow']:.2f},{cpu['shared']:.2f}\n")
PY
done
/usr/bin/python3 scripts/figures/flow-vs-packet-figure.py
