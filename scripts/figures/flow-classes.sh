#!/bin/sh
# Channel classes (docs/flow.md, "Channel classes"): each case below run at
# --fidelity flow with every channel and with flow.channel_classes=true;
# prints each size's time both ways, the classes' difference and the CPU
# seconds each run of all its sizes took; writes docs/figures/flow-classes.csv.
# CASES overrides the list (one case a line: a label, then incsim's
# options). Set INCSIM to use another binary (nothing is built then).
# About 10 minutes with the defaults, the runs one after the other.
set -eu
cd "$(dirname "$0")/../.."
[ -n "${INCSIM:-}" ] || sh scripts/build.sh >/dev/null
bin=${INCSIM:-build/incsim}
sizes=1M,16M,64M,256M
# The hardware alone, as docs/flow.md measures it.
hw='-c nccl.launch=none -c net.max_payload_bytes=256'
cases=${CASES:-"cluster3-tree --platform cluster --nodes 3 --algorithm tree --sizes $sizes $hw
cluster6-tree --platform cluster --nodes 6 --algorithm tree --sizes $sizes $hw
cluster16-tree --platform cluster --nodes 16 --algorithm tree --sizes $sizes $hw
cluster64-tree --platform cluster --nodes 64 --algorithm tree --sizes $sizes $hw
cluster16-ring --platform cluster --nodes 16 --algorithm ring --sizes $sizes $hw
cluster16-collnet --platform cluster --nodes 16 --algorithm collnet --sizes $sizes $hw
cluster64-collnet --platform cluster --nodes 64 --algorithm collnet --sizes 1G $hw
cluster256-tree-K16 --platform cluster --nodes 256 --algorithm tree --sizes 1G -c flow.steady_passes=16 $hw
cluster4-nvlstree --platform cluster --nodes 4 --algorithm nvlstree --sizes $sizes $hw
cluster16-nvlstree --platform cluster --nodes 16 --algorithm nvlstree --sizes $sizes $hw
cluster16-nvlssharp --platform cluster --nodes 16 --algorithm nvlssharp --sizes $sizes $hw
cluster64-nvlstree-K16 --platform cluster --nodes 64 --algorithm nvlstree --sizes 1G -c flow.steady_passes=16 $hw
cluster64-nvlssharp-K16 --platform cluster --nodes 64 --algorithm nvlssharp --sizes 1G -c flow.steady_passes=16 $hw
nojitter-cluster3-tree --platform cluster --nodes 3 --algorithm tree --sizes 16M -c gpu.mem_jitter_cycles=0 $hw
nojitter-cluster4-tree --platform cluster --nodes 4 --algorithm tree --sizes 1M,64M -c gpu.mem_jitter_cycles=0 $hw
nojitter-cluster8-tree --platform cluster --nodes 8 --algorithm tree --sizes 16M -c gpu.mem_jitter_cycles=0 $hw
nojitter-cluster8-leaf8-tree --platform cluster --nodes 8 --algorithm tree --sizes 16M -c gpu.mem_jitter_cycles=0 -c cluster.leaf_ports=8 $hw
nojitter-cluster8-3level-tree --platform cluster --nodes 8 --algorithm tree --sizes 16M -c gpu.mem_jitter_cycles=0 -c cluster.leaf_ports=4 -c cluster.spine_ports=4 $hw
nojitter-cluster8-3level-ring --platform cluster --nodes 8 --algorithm ring --sizes 16M -c gpu.mem_jitter_cycles=0 -c cluster.leaf_ports=4 -c cluster.spine_ports=4 $hw
nojitter-cluster4-nvlstree --platform cluster --nodes 4 --algorithm nvlstree --sizes 1M,64M -c gpu.mem_jitter_cycles=0 $hw
nojitter-cluster16-nvlssharp --platform cluster --nodes 16 --algorithm nvlssharp --sizes 16M -c gpu.mem_jitter_cycles=0 $hw
nojitter-cluster4-collnet --platform cluster --nodes 4 --algorithm collnet --sizes 1M,64M -c gpu.mem_jitter_cycles=0 $hw"}
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
out=docs/figures/flow-classes.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "case,size_bytes,whole_us,classes_us,difference,whole_cpu_s,classes_cpu_s" >"$out"
printf '%-30s %12s %12s %12s %9s %9s %9s\n' case size whole_us classes_us diff cpu cpu_classes
echo "$cases" | while read -r label opts; do
  [ -n "$label" ] || continue
  for c in false true; do
    # shellcheck disable=SC2086
    /usr/bin/time -f %U -o "$tmp/$c.cpu" "$bin" $opts --fidelity flow -c flow.channel_classes=$c --quiet \
      --csv "$tmp/$c.csv" >/dev/null
  done
  /usr/bin/python3 scripts/figures/paired-rows.py "$label" "$tmp" "$out" false true
done
