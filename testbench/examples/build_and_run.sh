#!/bin/sh
# The test install.examples:
# installs the build into a scratch prefix, builds each example out of tree
# against it with find_package(incsim), runs it and checks #wrong is 0.
# Usage: build_and_run.sh BUILD_DIR
set -eu
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
prefix="$build/example-install"
rm -rf "$prefix" "$build/example-build"
cmake --install "$build" --prefix "$prefix" >/dev/null
launcher=""
command -v ccache >/dev/null 2>&1 && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
# Each example with its own choices and a built-in to compare (custom_block:
# its eviction policy, the built-in one, its node kind on a platform file).
for run in "custom_platform push" "custom_platform ring" "custom_platform push flow" "custom_block fullest" "custom_block lru" "custom_block retimer"; do
  example=${run%% *} arg=${run#* }
  out="$build/example-build/$example"
  if [ ! -x "$out/$example" ]; then
    rm -rf "$out"
    cmake -S "$here/$example" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" $launcher >/dev/null
    cmake --build "$out" >/dev/null
  fi
  result=$(SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 "$out/$example" $arg)
  echo "$result"
  echo "$result" | grep -q "^# 0 wrong elements$" || { echo "$example $arg: wrong elements or no result" >&2; exit 1; }
done
