#!/usr/bin/env bash
# Prepares what an H200 run needs (../shared does not travel): a stripped copy of the release
# build (bin + lib) and the fixtures the GPU gates read, under .device/ (git-ignored). Carry
# `.device` in the device call and run scripts/device-run.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${2:-../shared}
build=${1:-build/release}  # usage: device-prepare.sh [BUILD_DIR] [SHARED_DIR] [lean|quant|slim|dense|trace|f32|moe] [OLD_BUILD_DIR]
# OLD_BUILD_DIR: a second build (another commit's, e.g. a candidate branch built in a git worktree)
# whose pp-bench, kernel-check and libmemra.so go to .device/old/ (the same relative layout, so its
# RPATH finds its own library): for phases that gate and time a change without a config key against
# the pack's own build in one call.
old_build=${4:-}
# lean: only kernel-check, pp-bench, gguf-synth and the GPU tests (quant: and run-gen, run-spec, moe-devq8-check), no CUPTI (no pp-bench --trace):
# for phases that need nothing else when the pack would not fit the carry limit otherwise.
lean=${3:-}
bins="run-gen run-spec kernel-check pp-bench gguf-synth receipt-sweep rp-q4-probe moe-devq8-check test_backend_cuda_gpu"
[ "$lean" = lean ] && bins="kernel-check pp-bench gguf-synth test_backend_cuda_gpu"
[ "$lean" = quant ] && bins="run-gen run-spec kernel-check pp-bench gguf-synth moe-devq8-check test_backend_cuda_gpu"
# slim: quant without the gemma3 / gemma4 f32 models (14 MB that do not compress; their CUDA-vs-CPU tests
# are then skipped, as device-run.sh says): quant with the receipts of a few more sessions went over the carry limit.
[ "$lean" = slim ] && bins="run-gen run-spec kernel-check pp-bench gguf-synth moe-devq8-check rp-q4-probe test_backend_cuda_gpu"
# dense: slim's binaries for the dense decode gates and rows (no run-spec, moe-devq8-check, rp-q4-probe) and
# only the dense quantized fixtures: slim went over the carry limit with the fifty-sixth session's receipts.
[ "$lean" = dense ] && bins="run-gen kernel-check pp-bench gguf-synth test_backend_cuda_gpu"
# trace: pp-bench, gguf-synth, kernel-check (with CUPTI) and rp-q4-probe, no fixtures (timelines, rows of synth
# files, probes).
[ "$lean" = trace ] && bins="kernel-check pp-bench gguf-synth rp-q4-probe"
# f32: kernel-check and the GPU tests with the f32 synth models only (the float-weight paths:
# mmvf, gemma's GELU GLU), which the other packs leave out for room: four of the five (llama, qwen3,
# gemma3, gemma4; qwen2, a llama-like file, does not fit beside them).
[ "$lean" = f32 ] && bins="kernel-check test_backend_cuda_gpu"
# moe: the GPU tests, pp-bench and gguf-synth with the qwen35 / qwen3moe fixtures (the tests a "dense" pack
# skips, and MoE rows of synth files): "slim" is over the carry limit.
[ "$lean" = moe ] && bins="pp-bench gguf-synth test_backend_cuda_gpu"
rm -rf .device && mkdir -p .device/bin .device/lib .device/shared/models/synth .device/shared/reference/arch .device/shared/anchors
for b in $bins; do
  [ -x "$build/bin/$b" ] && cp "$build/bin/$b" .device/bin/
done
cp -L "$build"/lib/libmemra.so .device/lib/
# CUPTI for pp-bench --trace (scripts/bootstrap.sh installs it; the H200 machine's own copy is not
# on the run path): in the full, "slim" (~1.5 MiB of the carry, so a gate phase can trace its arms)
# and "trace" packs.
[ "$lean" != lean ] && [ "$lean" != quant ] && [ "$lean" != f32 ] && [ -f /opt/memra-deps/cupti/lib/libcupti.so.13 ] && cp /opt/memra-deps/cupti/lib/libcupti.so.13 .device/lib/
# The profiler's libraries for pp-bench --pm-sample (~37 MB): in the "trace" pack only.
if [ "$lean" = trace ]; then
  for l in libnvperf_host.so libnvperf_target.so; do
    [ -f "/opt/memra-deps/cupti/lib/$l" ] && cp "/opt/memra-deps/cupti/lib/$l" .device/lib/
  done
fi
strip --strip-unneeded .device/bin/* .device/lib/libmemra.so
if [ -n "$old_build" ]; then
  mkdir -p .device/old/bin .device/old/lib
  cp "$old_build/bin/pp-bench" "$old_build/bin/kernel-check" .device/old/bin/
  cp -L "$old_build"/lib/libmemra.so .device/old/lib/
  strip --strip-unneeded .device/old/bin/* .device/old/lib/libmemra.so
  echo "old build: $("$old_build/bin/pp-bench" --version)"
fi
cp "$shared"/models/stories260K*.gguf .device/shared/models/
# quant: lean, with only the f32 synth models of the architectures no quantized file covers (gemma3,
# gemma4); the others' CUDA-vs-CPU tests are skipped by device-run.sh's cuda_vs_cpu, which says so.
models="llama-f32 llama-q8_0 llama-q4_k_m qwen2-f32 qwen3-f32 qwen3-q8_0 qwen3-q4_k_m gemma3-f32 gemma4-f32 qwen35-q4_k_m qwen3moe-q4_k_m qwen3moe-q8_0"
[ "$lean" = quant ] && models="llama-q8_0 llama-q4_k_m qwen3-q8_0 qwen3-q4_k_m gemma3-f32 gemma4-f32 qwen35-q4_k_m qwen3moe-q4_k_m qwen3moe-q8_0"
[ "$lean" = trace ] && models=""
[ "$lean" = f32 ] && models="llama-f32 qwen3-f32 gemma3-f32 gemma4-f32"  # (qwen2-f32 too went over the carry limit)
[ "$lean" = dense ] && models="llama-q8_0 llama-q4_k_m qwen3-q8_0 qwen3-q4_k_m qwen35-q4_k_m"  # (qwen35: the speculative tests' draft)
[ "$lean" = moe ] && models="llama-q8_0 qwen3-q4_k_m qwen35-q4_k_m qwen3moe-q4_k_m qwen3moe-q8_0"  # (llama, qwen3: the speculative tests')
[ "$lean" = slim ] && models="llama-q8_0 llama-q4_k_m qwen3-q8_0 qwen3-q4_k_m qwen35-q4_k_m qwen3moe-q4_k_m qwen3moe-q8_0"
for m in $models; do
  cp "$shared/models/synth/$m.gguf" .device/shared/models/synth/
done
cp "$shared"/reference/*.jsonl .device/shared/reference/
cp "$shared"/anchors/llamacpp-h200.md .device/shared/anchors/  # moe-devq8-check --anchors
cp "$shared"/reference/arch/{llama,qwen2,qwen3}.jsonl .device/shared/reference/arch/
du -sh .device; du -sh .device/*
# The carry limit is 64 MiB for the working tree and the carried paths together: carry
# .device-pack (an xz tar of .device: ~40 MiB since the release preset builds sm_90a machine code
# without PTX (~47-49 MiB with PTX, which with the ~15 MiB of committed files went over the limit
# and needed `lean`); gzip gave more) and unpack it there first:
#   bash scripts/device-unpack.sh && bash scripts/device-run.sh PHASE $OUT
rm -rf .device-pack && mkdir -p .device-pack && tar cf - .device | xz -6 -T2 > .device-pack/device.txz
du -sh .device-pack
tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
pack=$(stat -c %s .device-pack/device.txz)
echo "carry: $(( (tree + pack) / 1048576 )) MiB of 64 (tree $(( tree / 1048576 )) MiB, pack $(( pack / 1048576 )) MiB)"
