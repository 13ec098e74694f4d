#!/bin/bash
# Every algorithm on every platform it runs on at tiny and odd sizes, where
# most chunks hold 0 or 1 elements, and the GPU counts and channel counts
# where those edges appear (72 GPUs x 18 channels found an LL bug that no
# larger size showed). Prints one FAIL line per run that exits non-zero
# (wrong elements, a stall, a crash) and ends "matrix: N runs, M failed".
# About 15 minutes of CPU. Set INCSIM to use another binary.
set -u
cd "$(dirname "$0")/.." || exit 1
[ -n "${INCSIM:-}" ] || { sh scripts/build.sh >/dev/null || exit 1; }
B=${INCSIM:-build/incsim}
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
runs=0 failed=0
run() {
  local sizes=$1
  shift
  runs=$((runs + 1))
  local out
  out=$(timeout 600 "$B" "$@" --sizes "$sizes" 2>&1 | tail -1)
  case "$out" in *error*|"") failed=$((failed + 1)); echo "FAIL: $* --sizes $sizes :: $out";; esac
}
small=4,64,1000,4K,100000
for p in dgx2 fattree2l star hgx-h100 nvl72; do
  for a in push pull nvls dbtree hd multitree multitree-msg blink; do run $small --platform $p --algorithm $a; done
  run $small --platform $p --algorithm multicast --collective allgather
  for c in allreduce reducescatter allgather broadcast alltoall; do run $small --platform $p --collective $c; done
done
for p in torus mesh; do for a in ring dbtree hd ring2d ring2d-hier multitree blink; do run $small --platform $p --algorithm $a; done; done
run $small --platform bigraph --algorithm hdrm
for p in dgx1v dgx1p; do run $small --platform $p --algorithm ring; run $small --platform $p --algorithm blink; done
for pr in ll ll128 simple; do
  for ch in 3 7 18 32; do run 4,100,1000,4K,12348 --platform star --gpus 37 -c ring.protocol=$pr -c ring.channels=$ch; done
  run $small --platform nvl72 -c ring.protocol=$pr
done
for c in allgather reducescatter allreduce; do run 4,100,4K,12348 --platform hgx-h100 --algorithm nvls -c nvls.engine=cores --collective $c; done
for a in ring push pull nvls dbtree hd blink; do run 4,100,4K,12348 --platform dgx2 --gpus 5 --algorithm $a; done
for a in ring hring tree collnet nvlstree nvlsring nvlssharp; do run 4,100,4K,12348,1000000 --platform cluster --nodes 3 --algorithm $a; done
for c in reducescatter allgather broadcast alltoall; do run 4,100,4K,12348 --platform cluster --nodes 2 --collective $c; done
for d in int32 half bfloat16; do
  for op in sum max min; do
    for a in nvlssharp collnet nvlstree; do run 100,12348 --platform cluster --nodes 2 --algorithm $a --dtype $d --redop $op; done
  done
done
for a in netreduce ring; do run $small --platform rack --algorithm $a; done
for a in pnetreduce flatring tencent; do run $small --platform multigpu --algorithm $a; done
echo "matrix: $runs runs, $failed failed"
[ "$failed" -eq 0 ]
