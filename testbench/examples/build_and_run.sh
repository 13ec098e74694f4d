#!/bin/sh
# The test install.examples:
# installs the build into a scratch prefix, builds each example out of tree
# against it with find_package(incsim), runs it and checks #wrong is 0.
# Usage: build_and_run.sh BUILD_DIR
set -eu
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
prefix="$build/example-install"
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
launcher=""
command -v ccache >/dev/null 2>&1 && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
for example in custom_platform; do
  out="$build/example-build/$example"
  rm -rf "$out"
  cmake -S "$here/$example" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" $launcher >/dev/null
  cmake --build "$out" >/dev/null
  for algorithm in push ring; do
    result=$(SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 "$out/$example" "$algorithm")
    echo "$result"
    echo "$result" | grep -q "^# 0 wrong elements$" || { echo "$example $algorithm: wrong elements or no result" >&2; exit 1; }
  done
done
