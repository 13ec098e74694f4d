#!/bin/sh
# Install Debian's Slurm (slurmctld, slurmd, sbatch ...) and munge, as root.
# Used by the Slurm integration test (scripts/tests/test_slurm.py); safe to
# run again: does nothing when everything is already installed.
set -eu
if [ "$(id -u)" != 0 ]; then
    echo "install-slurm.sh: error: must run as root (apt-get)" >&2
    exit 1
fi
need=""
for cmd in slurmctld slurmd sbatch munged; do
    command -v "$cmd" >/dev/null 2>&1 || need=yes
done
[ -z "$need" ] && exit 0
export DEBIAN_FRONTEND=noninteractive
# Try without refreshing the lists first; refresh once if that fails.
if ! apt-get install -y -q --no-install-recommends slurm-wlm munge slurm-client; then
    apt-get update -q
    apt-get install -y -q --no-install-recommends slurm-wlm munge slurm-client
fi
