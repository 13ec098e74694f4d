#!/bin/sh
# Installs what is missing, builds, and runs the default experiment: ring
# all-reduce on the 16-GPU DGX-2 for 8 KiB to 64 MiB. Extra arguments go to
# incsim (e.g. scripts/demo.sh --sizes 8K:1M --json out.json).
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup.sh
sh scripts/build.sh
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
exec build/incsim --platform dgx2 --collective allreduce --algorithm ring --sizes 8K:64M "$@"
