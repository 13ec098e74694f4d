#!/bin/sh
# Installs what is missing, builds, and runs the whole test suite with ctest.
# .ci/run calls exactly this.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup.sh
sh scripts/build.sh
cd build
exec ctest --output-on-failure --timeout 900 -j2 "$@"
