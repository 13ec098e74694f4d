#!/bin/sh
# Builds the libFuzzer targets (testbench/fuzz/) with clang in their own build
# directory and runs each for SECONDS (default 300) from its seed corpus.
# New interesting inputs go to BUILD_DIR/corpus/NAME, never into the source
# tree; a finding (crash-*, timeout-*, leak-*) stops the run: fix it, then add
# the input to testbench/fuzz/corpus/NAME so every later run tries it again.
# Usage: scripts/fuzz.sh [SECONDS] [BUILD_DIR]   (the ctest fuzz.smoke: 10 s each)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-300}
build=${2:-$src/build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is missing (Debian package clang; scripts/setup.sh installs it)" >&2; exit 1; }
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$src/testbench/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ >/dev/null
fi
cmake --build "$build" >"$build/build.log" 2>&1 || { tail -n 40 "$build/build.log" >&2; exit 1; }
export ASAN_OPTIONS="detect_leaks=1"
for name in platform config options astra layers scalesim msccl; do
  mkdir -p "$build/corpus/$name" "$build/findings"
  echo "fuzz_$name: $seconds s"
  "$build/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/findings/$name-" "$build/corpus/$name" "$src/testbench/fuzz/corpus/$name" \
    2>"$build/fuzz_$name.log" || { tail -n 40 "$build/fuzz_$name.log" >&2; exit 1; }
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/fuzz_$name.log" | tr '\n' ' '
  echo
done
