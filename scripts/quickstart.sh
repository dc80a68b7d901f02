#!/usr/bin/env bash
# The main job on a fresh machine: install, build, fetch SmolLM2-135M-Instruct, chat with it.
# Builds CPU+CUDA when the CUDA toolkit is present, else CPU only; run-gen picks the GPU when
# there is one (run.backend = auto).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=release
if ! scripts/bootstrap.sh; then
  echo "quickstart: CUDA toolkit incomplete; building CPU-only" >&2
  preset=cpu-only
fi
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j"$(nproc)" --target run-gen
model=$(scripts/fetch-model.sh)
bin=build/$([ "$preset" = release ] && echo release || echo cpu)/bin/run-gen
"$bin" "$model" --chat -n 64 -p "${1:-What is the capital of France? Answer in one sentence.}"
