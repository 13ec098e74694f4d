#!/bin/bash
# incsim's flow fidelity against ASTRA-sim's analytical (congestion-unaware)
# network backend (issue 38; docs/flow.md, "Against ASTRA-sim's analytical
# backend"): one 1 GiB all-reduce on a cluster of 8-GPU nodes, 256 to 16,384
# GPUs, each tool's algorithms, CPU seconds and peak RSS of each run.
#
#   scripts/astra-sim-compare.sh [ASTRA_SIM_DIR]
#
# ASTRA_SIM_DIR (argument or environment; default build/astra-sim) holds
# ASTRA-sim's sources in src/ and its build in build/. Without src/ the
# script clones ASTRA_SIM_REPO at ASTRA_SIM_COMMIT with its submodules, or,
# with ASTRA_SIM_MIRRORS set, assembles the same tree from local bare
# mirrors named owner+name/repo (how it was built offline). It then applies
# one upstream fix (28f18ea, DoubleBinaryTree's state transition, made after
# the pinned commit) and builds the congestion_unaware target as
# build/astra_analytical/build.sh does. ASTRA_SIM_BIN uses a binary built
# elsewhere instead.
#
# Every run is niced, one at a time, under `timeout $TIMEOUT` and
# `/usr/bin/time -f '%U %M'`; each run's row is kept in $WORK/rows/ and
# reused on the next invocation (FORCE=1 reruns), so the script is
# idempotent and resumable. Writes docs/figures/astra-sim-compare.csv
# (tool, algorithm, gpus, size, simulated_us, cpu_s, rss_mb, status) and
# docs/figures/astra-sim-compare.png (OUT.csv, OUT.png). Knobs: OUT, GPUS, SIZE, TIMEOUT,
# STEADY_PASSES, MEM_LIMIT_GB, ASTRA_ALGS, INCSIM_ALGS, INCSIM_MAX, INCSIM, ONLY
# (a regular expression on "tool/algorithm/gpus": run only those).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

ASTRA_SIM_DIR=$(realpath -m "${1:-${ASTRA_SIM_DIR:-build/astra-sim}}")
ASTRA_SIM_REPO=${ASTRA_SIM_REPO:-https://github.com/astra-sim/astra-sim.git}
# astra-sim main of 2025-08-10 (ee852f4, "update chakra git with
# feederv3"): the last commit whose pinned submodules were all to be had
# here. The next ones move to chakra's feeder_v3 and do not build with any
# chakra commit the mirrors hold (Chakra::ETFeeder is in FeederV3 there),
# and from 2367f6f CMake fetches yaml-cpp from GitHub at configure time.
ASTRA_SIM_COMMIT=${ASTRA_SIM_COMMIT:-ee852f49d4f1f382219981a60b439f96e34b9113}
ASTRA_SIM_FIX=28f18ea0d58a96fd812e49b71bdac330a1e3c965
GPUS=${GPUS:-"256 1024 4096 16384"}
SIZE=${SIZE:-1073741824}                 # bytes: 1 GiB
TIMEOUT=${TIMEOUT:-900}                  # seconds per run, wall clock
MEM_LIMIT_GB=${MEM_LIMIT_GB:-16}         # address space per run (ulimit -v): the machine is shared
STEADY_PASSES=${STEADY_PASSES:-16}       # incsim flow.steady_passes (docs/flow.md, "Steady passes")
# One algorithm for both dimensions, or DIM1+DIM2. Under localBWAware a
# dimension's phases are reduce-scatter, all-reduce, all-gather, but
# doubleBinaryTree runs every phase it is given as a whole all-reduce
# (Sys::generate_collective_phase), so it is given the network only: a
# ring inside the node, the double binary tree across, as NCCL's tree.
ASTRA_ALGS=${ASTRA_ALGS-"ring halvingDoubling ring+doubleBinaryTree"}
# hring is NCCL's hierarchical ring (a ring in each node, a ring per rail
# across): the same shape as ASTRA-sim's ring on two dimensions under
# localBWAware (reduce-scatter in the node, all-reduce across, all-gather).
# ALG@K runs ALG with flow.steady_passes=K instead of STEADY_PASSES: tree@4
# prices a pass where K = 16 does not end (4 is too few passes to trust the
# time: docs/flow.md, "Cost"). ALG+classes runs it with
# flow.channel_classes=true: one rail's channels for all eight
# (docs/flow.md, "Channel classes").
INCSIM_ALGS=${INCSIM_ALGS-"tree nvlstree hring ring tree@4 tree+classes nvlstree+classes"}
# Above these GPU counts a run is recorded as skipped(cost), not started:
# each costs 5 to 70 times more CPU per 4 times the GPUs (measured here, at
# 1 GiB: ring 155 s on 256 GPUs; hring 11.7 s on 256, 815 s on 1,024;
# nvlstree 11 s on 256, 66 s on 1,024; tree 4.8 s on 256, 24.8 s on
# 1,024, no end in 900 s on 4,096), so the next count would not end within
# TIMEOUT. The flat ring makes 2(n-1) transfers per rank, channel and pass,
# and its program holds 2(n-1) operations of 44 B per rank and channel
# (docs/flow.md, "Cost").
INCSIM_MAX=${INCSIM_MAX-"ring=256 hring=1024 nvlstree=1024 tree=4096"}
INCSIM=$(realpath -m "${INCSIM:-build/incsim}")
ONLY=${ONLY:-.}
FORCE=${FORCE:-0}
WORK=$root/build/astra-sim-compare
OUT=$(realpath -m "${OUT:-docs/figures/astra-sim-compare}")   # OUT.csv, OUT.png
CSV=$OUT.csv
PNG=$OUT.png
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

# --- The platform both tools simulate, from incsim's defaults -------------
# (build/incsim --platform cluster --list-params; platforms/platform.cpp,
# modules/topology/cluster.cpp). GB/s here are 10^9 B/s.
nvlink_GBps=450        # hgx-h100: 18 NVLink4 links of link.bw_GBps = 25 per GPU, each direction
nvlink_ns=150          # GPU -> NVSwitch -> GPU: link.latency_ns 0 + switch.latency_ns 150 + 0
ib_GBps=50             # cluster.net_Gbps = 400 per GPU's adapter (PCIe, cluster.pcie_GBps 63, is wider)
# GPU -> GPU on another node through its rail leaf: PCIe 250 + adapter 300 +
# cable 50 + leaf 200 + cable 50 + adapter 300 + PCIe 250 (cluster.pcie_latency_ns,
# hca.latency_ns, cluster.net_latency_ns, ib.switch_latency_ns). Above 32
# nodes incsim's routes between leaves also cross spines (+300 ns) and,
# above 1,024 nodes, cores; ASTRA-sim's Switch dimension is one switch.
ib_ns=1400
# ASTRA-sim's Switch building block charges 2 hops x latency per send
# (congestion_unaware/basic-topology/Switch.cpp) and reads bandwidth in GiB/s
# (NetworkFunction.cpp: 1 GB = 2^30 B).
astra_bw() { /usr/bin/python3 -c "print(round($1e9 / 2**30, 4))"; }
astra_lat() { /usr/bin/python3 -c "print($1 / 2)"; }

mkdir -p "$WORK/rows" "$WORK/runs" "$(dirname "$CSV")"
# A fresh build/ keeps the rows OUT.csv already has, so ONLY reruns or adds
# some and leaves the others as they were measured.
if [ -f "$CSV" ] && ! ls "$WORK/rows/"*-"$SIZE".csv >/dev/null 2>&1; then
  tail -n +2 "$CSV" | while IFS=, read -r tool alg gpus size rest; do
    [ "$size" != "$SIZE" ] || echo "$tool,$alg,$gpus,$size,$rest" >"$WORK/rows/$tool-$alg-$gpus-$size.csv"
  done
fi

# --- ASTRA-sim: sources, build --------------------------------------------
astra_src=$ASTRA_SIM_DIR/src
fetch_astra() {
  [ -d "$astra_src/.git" ] && return 0
  mkdir -p "$ASTRA_SIM_DIR"
  if [ -n "${ASTRA_SIM_MIRRORS:-}" ]; then
    # Offline: the same tree from bare mirrors. The analytical backend's own
    # pin and chakra's are the commit's; fmt and spdlog stand in with the
    # release tags nearest the pins the mirrors hold (spdlog 1.13.0 builds
    # its bundled fmt 9.1.0, so the external fmt is 9.1.0 too).
    local m=$ASTRA_SIM_MIRRORS
    git clone -q --no-checkout "$m/astra-sim+astra-sim/repo" "$astra_src"
    git -C "$astra_src" checkout -q "$ASTRA_SIM_COMMIT"
    sub() {
      rm -rf "${astra_src:?}/$1"
      git clone -q --no-checkout "$m/$2/repo" "$astra_src/$1"
      git -C "$astra_src/$1" checkout -q "$3" || true   # a mirror may lack large test files
    }
    sub extern/graph_frontend/chakra astra-sim+chakra 125a132d8e17533e90ea58ebd3c4c2065e89250d
    sub extern/network_backend/analytical astra-sim+astra-network-analytical 599a0473a9a74f5383f73b3cea5a12b9bc5ebaef
    sub extern/remote_memory_backend/analytical astra-sim+astra-memory-analytical 641cce854d256bfd288b1de9607b6757313363f9
    sub extern/helper/fmt fmtlib+fmt 9.1.0
    sub extern/helper/spdlog gabime+spdlog v1.13.0
    sub extern/network_backend/analytical/extern/yaml-cpp jbeder+yaml-cpp 3d2888cc8a45da2f420454ad728cdfad01a3d54f
  else
    git clone -q "$ASTRA_SIM_REPO" "$astra_src"
    git -C "$astra_src" checkout -q "$ASTRA_SIM_COMMIT"
    git -C "$astra_src" submodule update --init --recursive \
      extern/graph_frontend/chakra extern/network_backend/analytical \
      extern/remote_memory_backend/analytical extern/helper/fmt extern/helper/spdlog
  fi
}
patch_astra() {
  local fix
  fix=$(git -C "$astra_src" rev-parse --verify -q "$ASTRA_SIM_FIX^{commit}" || true)
  [ -n "$fix" ] || { echo "astra-sim-compare: upstream fix ${ASTRA_SIM_FIX:0:7} not in the clone, built without it" >&2; return 0; }
  git -C "$astra_src" show "$fix" --format= >"$WORK/dbt-fix.patch"
  if git -C "$astra_src" apply --check "$WORK/dbt-fix.patch" 2>/dev/null; then
    git -C "$astra_src" apply "$WORK/dbt-fix.patch"
  fi   # else: applied already
}
build_astra() {
  local proto=$astra_src/extern/graph_frontend/chakra/schema/protobuf
  [ -f "$proto/et_def.pb.cc" ] || protoc et_def.proto --proto_path="$proto" --cpp_out="$proto"
  [ -f "$proto/et_def_pb2.py" ] || protoc et_def.proto --proto_path="$proto" --python_out="$proto"
  mkdir -p "$ASTRA_SIM_DIR/build"
  [ -f "$ASTRA_SIM_DIR/build/Makefile" ] ||
    (cd "$ASTRA_SIM_DIR/build" && nice -n 10 cmake "$astra_src/build/astra_analytical" \
      -DBUILDTARGET=congestion_unaware -DCMAKE_BUILD_TYPE=Release >/dev/null)
  (cd "$ASTRA_SIM_DIR/build" && nice -n 10 cmake --build . -j2 >/dev/null)
}
wanted() {
  [ "$FORCE" = 1 ] || [ ! -f "$WORK/rows/$1-$2-$3-$SIZE.csv" ] || return 1
  echo "$1/$2/$3" | grep -Eq "$ONLY"
}
# ASTRA-sim is built only if one of its runs is to be made.
astra_wanted=
for n in $GPUS; do for alg in $ASTRA_ALGS; do wanted astra-sim "$alg" "$n" && astra_wanted=1; done; done
if [ -z "$astra_wanted" ]; then
  astra_bin=
elif [ -n "${ASTRA_SIM_BIN:-}" ]; then
  astra_bin=$(realpath "$ASTRA_SIM_BIN")
else
  astra_bin=$(find "$ASTRA_SIM_DIR/build" -name AstraSim_Analytical_Congestion_Unaware -type f 2>/dev/null | head -1 || true)
  if [ -z "$astra_bin" ]; then
    fetch_astra && patch_astra && build_astra
    astra_bin=$(find "$ASTRA_SIM_DIR/build" -name AstraSim_Analytical_Congestion_Unaware -type f | head -1)
  fi
fi
[ -z "$astra_wanted" ] || [ -x "$astra_bin" ] ||
  { echo "astra-sim-compare: no ASTRA-sim binary under $ASTRA_SIM_DIR/build" >&2; exit 1; }
if [ ! -x "$INCSIM" ]; then
  [ -f build/build.ninja ] || nice -n 10 cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  nice -n 10 cmake --build build --target incsim -j2 >/dev/null
fi

# --- ASTRA-sim's inputs -----------------------------------------------------
in=$WORK/inputs
mkdir -p "$in"
echo '{ "memory-type": "NO_MEMORY_EXPANSION" }' >"$in/remote-memory.json"
network_yaml() {  # $1: GPUs
  local f=$in/network-$1.yml
  [ -f "$f" ] || cat >"$f" <<EOF
# Two-level cluster of hgx-h100 nodes as incsim's defaults give it
# (scripts/astra-sim-compare.sh): dimension 1 the node's NVLink switch,
# dimension 2 the InfiniBand network, one adapter per GPU.
topology: [ Switch, Switch ]
npus_count: [ 8, $(($1 / 8)) ]
bandwidth: [ $(astra_bw $nvlink_GBps), $(astra_bw $ib_GBps) ]  # GiB/s: ${nvlink_GBps} and ${ib_GBps} GB/s
latency: [ $(astra_lat $nvlink_ns), $(astra_lat $ib_ns) ]  # ns per hop; a Switch send is 2 hops: ${nvlink_ns} and ${ib_ns} ns
EOF
  echo "$f"
}
system_json() {  # $1: algorithm, the same on both dimensions, or DIM1+DIM2
  local f=$in/system-$1.json d1=${1%+*} d2=${1#*+}
  # ASTRA-sim's examples/system/native_collectives/HGX-H100-validated.json,
  # with the algorithms of the two dimensions.
  [ -f "$f" ] || cat >"$f" <<EOF
{
  "scheduling-policy": "LIFO",
  "endpoint-delay": 10,
  "active-chunks-per-dimension": 2,
  "preferred-dataset-splits": 4,
  "all-reduce-implementation": [ "$d1", "$d2" ],
  "all-gather-implementation": [ "$d1", "$d2" ],
  "reduce-scatter-implementation": [ "$d1", "$d2" ],
  "all-to-all-implementation": [ "$d1", "$d2" ],
  "collective-optimization": "localBWAware",
  "local-mem-bw": 3350,
  "boost-mode": 0
}
EOF
  echo "$f"
}
workload() {  # $1: GPUs. One Chakra ET file per NPU, each one all-reduce of $SIZE bytes.
  local d=$in/workload-$1-$SIZE
  if [ ! -f "$d/done" ]; then
    mkdir -p "$d"
    PYTHONPATH="$astra_src/extern/graph_frontend/chakra/schema/protobuf" /usr/bin/python3 - "$1" "$SIZE" "$d" <<'PY'
import sys
from google.protobuf.internal.encoder import _VarintBytes
import et_def_pb2 as et
n, size, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def msg(m):  # chakra's protolib.encodeMessage: varint length, then the message
    b = m.SerializeToString()
    return _VarintBytes(len(b)) + b
node = et.Node(id=0, name=f"all_reduce_{n}npus_{size}B", type=et.COMM_COLL_NODE)
node.attr.append(et.AttributeProto(name="is_cpu_op", bool_val=False))
node.attr.append(et.AttributeProto(name="comm_type", int64_val=et.ALL_REDUCE))
node.attr.append(et.AttributeProto(name="comm_size", int64_val=size))
body = msg(et.GlobalMetadata(version="0.0.4")) + msg(node)
for r in range(n):
    with open(f"{d}/all_reduce.{r}.et", "wb") as f:
        f.write(body)
PY
    touch "$d/done"
  fi
  echo "$d/all_reduce"
}

# --- One run ----------------------------------------------------------------
# row TOOL ALG GPUS SIMULATED_US CPU_S RSS_MB STATUS
row() { echo "$1,$2,$3,$SIZE,$4,$5,$6,$7" >"$WORK/rows/$1-$2-$3-$SIZE.csv"; }
timed() {  # timed NAME CMD...: runs CMD niced under timeout and time; sets cpu, rss, rc
  local t=$WORK/runs/$1.time
  set +e
  # In runs/: ASTRA-sim writes log/log.log and log/err.log in its working folder.
  (cd "$WORK/runs" && ulimit -v $((MEM_LIMIT_GB * 1024 * 1024))
    exec /usr/bin/time -f '%U %M' -o "$t" timeout "$TIMEOUT" nice -n 10 "${@:2}" >"$WORK/runs/$1.out" 2>"$WORK/runs/$1.err")
  rc=$?
  set -e
  read -r cpu rss_kb < <(tail -1 "$t")
  rss=$((rss_kb / 1024))
}
status_of() {  # $1: exit status, $2: the run's stderr
  case $1 in
    0) echo ok ;;
    124) echo timeout ;;
    137) echo killed ;;
    *) if grep -q "bad_alloc\|address-space limit" "$2"; then echo "memory(>${MEM_LIMIT_GB}GB)"; else echo "failed($1)"; fi ;;
  esac
}

for n in $GPUS; do
  for alg in $ASTRA_ALGS; do
    wanted astra-sim "$alg" "$n" || continue
    net=$(network_yaml "$n"); sys=$(system_json "$alg"); wl=$(workload "$n")
    echo "astra-sim $alg $n GPUs ..." >&2
    timed "astra-sim-$alg-$n" "$astra_bin" --workload-configuration="$wl" \
      --system-configuration="$sys" --network-configuration="$net" \
      --remote-memory-configuration="$in/remote-memory.json"
    # sys[i] finished, T cycles: T in ns; the collective ends with the last rank.
    us=$(sed -n 's/.*sys\[[0-9]*\] finished, \([0-9]*\) cycles.*/\1/p' "$WORK/runs/astra-sim-$alg-$n.out" |
      sort -n | tail -1 | awk '{ if ($1 != "") printf "%.2f", $1 / 1000 }')
    st=$(status_of $rc "$WORK/runs/astra-sim-$alg-$n.err")
    [ "$st" != ok ] || [ -n "$us" ] || st="failed(no time)"
    row astra-sim "$alg" "$n" "$us" "$cpu" "$rss" "$st"
    echo "  $st: ${us:--} us, $cpu s, $rss MB" >&2
  done
  for alg in $INCSIM_ALGS; do
    wanted incsim "$alg" "$n" || continue
    max=$(echo "$INCSIM_MAX" | tr ' ' '\n' | sed -n "s/^$alg=//p")
    if [ -n "$max" ] && [ "$n" -gt "$max" ]; then
      row incsim "$alg" "$n" "" "" "" "skipped(cost)"
      continue
    fi
    echo "incsim $alg $n GPUs ..." >&2
    base=${alg%+classes} k=$STEADY_PASSES
    [ "${base#*@}" = "$base" ] || k=${base#*@}
    timed "incsim-$alg-$n" "$INCSIM" --fidelity flow --platform cluster --nodes $((n / 8)) --algorithm "${base%@*}" \
      --sizes "$SIZE" -c cluster.pxn=0 -c flow.steady_passes="$k" -c flow.channel_classes=$([ "$base" = "$alg" ] &&
      echo false || echo true) --quiet --csv "$WORK/runs/incsim-$alg-$n.csv"
    us=""
    [ ! -s "$WORK/runs/incsim-$alg-$n.csv" ] ||
      us=$(/usr/bin/python3 -c 'import csv,sys; print("%.2f" % float(next(csv.DictReader(open(sys.argv[1])))["time_us"]))' \
        "$WORK/runs/incsim-$alg-$n.csv")
    st=$(status_of $rc "$WORK/runs/incsim-$alg-$n.err")
    row incsim "$alg" "$n" "$us" "$cpu" "$rss" "$st"
    echo "  $st: ${us:--} us, $cpu s, $rss MB" >&2
  done
done

# --- Table and plot -----------------------------------------------------------
{
  echo "tool,algorithm,gpus,size,simulated_us,cpu_s,rss_mb,status"
  cat "$WORK"/rows/*-"$SIZE".csv | sort -t, -k1,1 -k2,2 -k3,3n
} >"$CSV"
column -s, -t "$CSV"
/usr/bin/python3 - "$CSV" "$PNG" "$TIMEOUT" <<'PY'
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open(sys.argv[1])))
fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
for key in sorted({(r["tool"], r["algorithm"]) for r in rows}):
    rs = sorted((r for r in rows if (r["tool"], r["algorithm"]) == key), key=lambda r: int(r["gpus"]))
    ok = [r for r in rs if r["status"] == "ok"]
    style = "-o" if key[0] == "incsim" else "--s"
    line, = ax.plot([int(r["gpus"]) for r in ok], [float(r["cpu_s"]) for r in ok], style, label=f"{key[0]} {key[1]}")
    cut = [r for r in rs if r["status"] != "ok" and r["cpu_s"]]
    ax.plot([int(r["gpus"]) for r in cut], [float(r["cpu_s"]) for r in cut], "x", color=line.get_color(), ms=9)
    bx.plot([int(r["gpus"]) for r in ok], [float(r["simulated_us"]) / 1000 for r in ok], style,
            color=line.get_color(), label=f"{key[0]} {key[1]}")
gpus = sorted({int(r["gpus"]) for r in rows})
size = int(rows[0]["size"])
# Without in-network reduction each GPU sends 2(N-1)/N of size/8 through its 50 GB/s adapter.
bx.plot(gpus, [2 * (g // 8 - 1) / (g // 8) * size / 8 / 50e9 * 1e3 for g in gpus], ":k",
        label="adapters' bound (no in-network reduction)")
for a in (ax, bx):
    a.set_xscale("log", base=2); a.set_xlabel("GPUs (8 per node)"); a.grid(True, which="both", alpha=0.3)
    a.set_xticks(gpus); a.set_xticklabels([f"{g:,}" for g in gpus])
ax.set_yscale("log"); ax.set_ylabel("CPU time (user s)")
ax.set_title("Cost of one 1 GiB all-reduce (x: stopped, at its CPU time)", fontsize=9)
bx.set_ylabel("simulated time (ms)"); bx.set_title("Simulated time", fontsize=9)
ax.legend(fontsize=7)
bx.legend(fontsize=7)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=120)
PY
echo "wrote $CSV and $PNG"
