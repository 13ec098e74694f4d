#!/bin/sh
# Installs what is missing, builds, and runs the default experiment: ring
# all-reduce on the 16-GPU DGX-2 for 8 KiB to 64 MiB. Extra arguments go to
# incsim (e.g. scripts/demo.sh --sizes 8K:1M --json out.json); relative paths
# in them are the caller's, so the run stays in the caller's folder.
set -eu
repo="$(cd "$(dirname "$0")/.." && pwd)"
sh "$repo/scripts/setup.sh"
sh "$repo/scripts/build.sh"
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
exec "$repo/build/incsim" --platform dgx2 --collective allreduce --algorithm ring --sizes 8K:64M "$@"
