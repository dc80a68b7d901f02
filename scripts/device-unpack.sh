#!/usr/bin/env bash
# Runs on the H200 machine from the repository root: unpacks the carried .device-pack/device.txz
# (scripts/device-prepare.sh) into .device/. tar's xz filter needs the xz binary; where the machine
# lacks it, Python's tarfile (lzma) reads the same archive.
set -euo pipefail
cd "$(dirname "$0")/.."
pack=.device-pack/device.txz
[ -f "$pack" ] || { echo "device-unpack: $pack missing (carry .device-pack)" >&2; exit 1; }
if command -v xz >/dev/null 2>&1; then
  tar xJf "$pack"
else
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall()" "$pack"
fi
