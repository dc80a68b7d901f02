#!/usr/bin/env bash
# The test command (README; .ci/run runs exactly this): bootstrap, build everything (CUDA kernels
# included, reduced instance set), run every CPU test, sweep the committed receipts, then run the
# GGUF corruption sweep and the parser tests under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
jobs=$(nproc)
# Compiler cache shared across clones (CI builds a fresh clone in another folder).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
# 1. Parsers and the GGUF corruption sweep under AddressSanitizer + UBSan (CPU-only tree).
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$jobs" --target test_gguf test_config test_receipt
for t in test_gguf test_config test_receipt; do
  build/asan/bin/$t --gtest_brief=1
done
# 2. Everything (CUDA kernels included, reduced instance set), every CPU test, and the receipt
#    sweep (registered as the ctest test receipt_sweep).
cmake --preset ci >/dev/null
cmake --build --preset ci -j"$jobs"
ctest --test-dir build/ci -LE gpu --output-on-failure -j"$jobs" --timeout 1500
# 3. No PDL kernel may read an earlier kernel's output before its dependency wait: the loads each
#    kernel's SASS issues before griddepcontrol.wait (scripts/check-pdl-loads.py; tools from
#    scripts/bootstrap.sh).
sass_tools=/opt/memra-deps/sass-tools
if [ -x "$sass_tools/cuobjdump" ] && [ -x "$sass_tools/nvdisasm" ]; then
  python3 scripts/check-pdl-loads.py build/ci --cuobjdump "$sass_tools/cuobjdump" --nvdisasm "$sass_tools/nvdisasm" | tail -n 3
else
  echo "test.sh: warning: cuobjdump / nvdisasm missing under $sass_tools; the PDL load check did not run" >&2
fi
