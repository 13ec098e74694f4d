#!/bin/sh
# Builds the whole project with AddressSanitizer and UndefinedBehaviorSanitizer
# in build-asan/ and runs the full ctest suite there. Any report fails its
# test: UBSan does not recover, ASan aborts on the first error.
# Usage: scripts/sanitize.sh [ctest arguments], e.g. -R test_topology
# Release keeps assertions on (CMakeLists.txt). On 2 cores the build takes about 15 minutes and the suite a few times
# longer than in build/.
set -eu
cd "$(dirname "$0")/.."
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g"
# CMake takes CXXFLAGS and LDFLAGS from the environment when it first
# configures a build: so do the examples install.examples builds out of tree.
export CXXFLAGS="$flags" LDFLAGS="-fsanitize=address,undefined"
# detect_leaks: memory still held at exit (SystemC's kernel and modules are
# never destroyed) is not an error here.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1"
# Timeouts: ten times the plain build's (a sanitized run is a few times slower).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DINCSIM_TEST_TIMEOUT_SCALE=10 >/dev/null
cmake --build build-asan -j2
cd build-asan
exec ctest --output-on-failure --timeout 1800 -j2 "$@"
