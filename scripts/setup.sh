#!/bin/sh
# Installs what incsim needs from Debian 12's archive, as root, and only what
# is missing (a second run costs a few dpkg queries). Used by demo.sh and
# test.sh; safe to run by hand.
set -eu
packages="g++ cmake ninja-build ccache pkg-config libsystemc-dev catch2 libyaml-cpp-dev
nlohmann-json3-dev libboost-program-options-dev libspdlog-dev gtkwave python3-yaml python3-matplotlib libglpk-dev
clang libprotobuf-dev protobuf-compiler"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "setup.sh: error: these Debian packages are missing and installing them needs root:$missing" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends $missing
