#!/bin/sh
# Steady passes (docs/flow.md, "Steady passes"): each case below run whole
# at --fidelity flow and with flow.steady_passes K = 16, 32 and 64; prints
# each extrapolation's error against the whole run, the difference of its
# period's two halves and the CPU seconds each took; writes
# docs/figures/flow-steady.csv. CASES overrides the list (one case a line:
# a label, then incsim's options with one size). Set INCSIM to use another
# binary (nothing is built then). About 45 minutes with the defaults.
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
bin=${INCSIM:-build/incsim}
# The hardware alone, as docs/flow.md measures it.
hw='-c nccl.launch=none -c net.max_payload_bytes=256'
cases=${CASES:-"dgx2-ring --platform dgx2 --algorithm ring --sizes 16G
hgx-h100-nvls --platform hgx-h100 --algorithm nvls --sizes 16G $hw
hgx-h100-ring --platform hgx-h100 --algorithm ring --sizes 16G
nvl72-nvls --platform nvl72 --algorithm nvls --sizes 16G
two-switch-ring --platform platforms/examples/two-switch.yaml --algorithm ring --sizes 4G
three-switch-ring --platform platforms/examples/three-switch.yaml --algorithm ring --sizes 4G
two-switch-nvls --platform platforms/examples/two-switch.yaml --algorithm nvls --sizes 4G
fattree2l-ring --platform fattree2l --algorithm ring --sizes 32G
a100-nccl --platform hgx-a100 --algorithm nccl -c nccl.launch=process --sizes 4G
b200-nccl --platform hgx-b200 --algorithm nccl -c nccl.launch=process -c nccl.symmetric=true --sizes 8G
cluster16-tree --platform cluster --nodes 16 --algorithm tree --sizes 4G -c cluster.pxn=0 $hw
cluster16-nvlstree --platform cluster --nodes 16 --algorithm nvlstree --sizes 4G $hw
cluster16-nvlssharp --platform cluster --nodes 16 --algorithm nvlssharp --sizes 4G $hw
cluster16-collnet --platform cluster --nodes 16 --algorithm collnet --sizes 16G $hw"}
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
out=docs/figures/flow-steady.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "case,size_bytes,passes,steady_passes,whole_us,steady_us,error,halves,whole_cpu_s,steady_cpu_s" >"$out"
printf '%-20s %6s %4s %12s %12s %8s %7s %8s %8s\n' case passes K whole_us steady_us error halves cpu cpu_K
echo "$cases" | while read -r label opts; do
  [ -n "$label" ] || continue
  for k in 0 16 32 64; do
    # shellcheck disable=SC2086
    /usr/bin/time -f %U -o "$tmp/$k.cpu" "$bin" $opts --fidelity flow -c flow.steady_passes=$k --csv "$tmp/$k.csv" >"$tmp/$k.out"
  done
  /usr/bin/python3 - "$label" "$tmp" "$out" <<'PY'
import csv, re, sys
label, tmp, out = sys.argv[1:4]
def row(k):
    r = next(csv.DictReader(open(f"{tmp}/{k}.csv")))
    m = re.search(r"passes: (\d+) per channel.*differ by ([0-9.]+)%", open(f"{tmp}/{k}.out").read())
    return r, float(open(f"{tmp}/{k}.cpu").read().split()[-1]), m
whole, cpu0, _ = row(0)
t0 = float(whole["time_us"])
with open(out, "a") as o:
    for k in (16, 32, 64):
        r, cpu, m = row(k)
        t = float(r["time_us"])
        if not m:  # too few passes: the run was whole
            print(f"{label:<20} {'':>6} {k:4} {t0:12.2f} {'whole':>12}")
            continue
        passes, halves = int(m.group(1)), float(m.group(2))
        err = t / t0 - 1
        print(f"{label:<20} {passes:6} {k:4} {t0:12.2f} {t:12.2f} {100 * err:+7.2f}% {halves:6.1f}% {cpu0:8.2f} {cpu:8.2f}")
        o.write(f"{label},{r['size_bytes']},{passes},{k},{t0:.3f},{t:.3f},{err:.4f},{halves / 100:.4f},{cpu0:.2f},{cpu:.2f}\n")
PY
done
