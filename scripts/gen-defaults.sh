#!/usr/bin/env bash
# Regenerates configs/defaults.toml from the config schema (lib/config/config.cpp).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/cpu/bin/run-gen}
"$bin" --print-defaults > "$here/configs/defaults.toml"
