#!/bin/sh
# Configures and builds incsim in build/ (Release with assertions on, Ninja, ccache).
set -eu
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build build
