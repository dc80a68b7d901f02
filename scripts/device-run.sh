#!/usr/bin/env bash
# Runs on the H200 machine from the repository root, with .device/ carried (scripts/device-prepare.sh).
# usage: scripts/device-run.sh PHASE OUTDIR
#   gates  : environment + ldd smoke, kernel-check (all sections, then --perf), rp-q4-probe,
#            CUDA-vs-CPU tests, run-gen on stories260K (cuda and cpu)
#   bench8 : gguf-synth qwen3-8b q4_k_m -> pp-bench rows -> delete (then q8_0, q4_0 when $3 = all)
#   bench32: gguf-synth qwen3-32b q4_k_m -> pp-bench tg128 / pp512 -> delete
#   final  : everything in one call (the usual choice): kernel-check all, CUDA-vs-CPU model
#            tests, run-gen, pp-bench rows of every issue-6 model plus the A/B arms
#   levers : touched kernel-check sections, CUDA-vs-CPU, qwen3-8b rows with the split_k arm
#   levers32: qwen3-32b q4_k_m tg128 / pp512 (with the split_k arm when $3 = arms)
#   prefill: staged prefill attention + GEMM input reuse: attn prefill / quant convert gates and
#            --perf, CUDA-vs-CPU, qwen3-8b q4_k_m pp512/pp2048 base vs both old forms, traced
#   rows   : staged prefill gates (attn prefill cases, --perf at n512), then the prefill rows of
#            qwen3-8b f16 (base vs the unstaged arm) and qwen3-32b q4_k_m pp512 (both arms) + tg128
#   final3 : act/quant gates, CUDA-vs-CPU, qwen3-8b q4_k_m pp512/pp2048 base vs no GEMM-input
#            reuse, qwen3-32b q4_k_m pp512 (the closing rows of the prefill levers)
#   final4 : norm gates, CUDA-vs-CPU, qwen3-8b q4_k_m pp512/pp2048/tg128 base vs no GEMM-input
#            reuse (the norm's f16 copy added to it)
#   first  : kernel-check all, CUDA-vs-CPU (a session's first call)
#   cap    : register-capped mmvs instances: gates, --perf, tg128 arms on q4_k_m/q8_0/q4_0
#   cap2   : the plain-matrix cap alone (q4_k_m, q8_0 tg128 at d0)
#   confirm: the register-cap default vs uncapped vs the no-spill GLU cap on q4_0, q4_k_m, qwen3-32b
#   remeasure: the small levers with interleaved arms + the cost of a kernel boundary (probe arms)
#   resid  : the residual add in the o/down matvec epilogue + the split decode norm: gates, --perf, tg128 arms
#   w2     : kernels.mmvs_split_max_warps 2 (the default since 2026-12-02) vs 4 on qwen3-8b q4_k_m (3 depths) and
#            qwen3-32b q4_k_m tg128 (ran at 1bce27b, when 4 was the default and the arms were the other way round)
#   rows2  : today's defaults vs the norm as before on the qwen3-8b rows (+ gates, a d0 trace)
#   rows32 : the same on qwen3-32b q4_k_m tg128
#   attnpre: the attention / combine split-0 loads beside the pos load: attn gates, tg128 rows, a trace
#   splitw : warps per long mmvs row (mmvs_split_max_warps 2 vs 4 vs split off): gates, --perf, tg128 arms
#   splitw32: the same arms on qwen3-32b q4_k_m tg128
#   final5 : today's defaults vs the capped head: CUDA-vs-CPU, tg128 rows of qwen3-8b and qwen3-32b
#   attnq8 : attn section + --perf, CUDA-vs-CPU, qwen3-8b q4_k_m tg128 at 3 depths with the
#            attn_q8_scores arm, every decode row traced (CUPTI)
#   levers2: attn gates + --perf, CUDA-vs-CPU, qwen3-8b q4_k_m tg128 at 3 depths with the
#            attn_v_stage / attn_q8_scores arms, pp512/pp2048
#   final2 : qwen3-8b q4_0 / q8_0 and qwen3-32b q4_k_m rows with the defaults
#   gates2 : CUDA-vs-CPU tests, run-gen both backends, kernel-check all (a final commit's gates)
#   combine: attn_decode gates, qwen3-8b q4_k_m tg128 at 3 depths with the old-combine arm
#   arms   : norm/mmvs_id gates, then the split_k arm on q4_k_m, q4_0, q8_0 (tg128, pp512)
#   w3     : 3 warps per 12288-weight row in 6-warp CTAs vs the default 2 (ran at 8fefe6b; the w3 value
#            and its arm are removed, bench/notes/mmvs.md), + gates (mmvs, mmvs_id, rope, attn), d0 traces
#   fold   : kernels.attn_rope_fold (q/k norm + RoPE + K/V append inside the decode attention):
#            gates (fused, attn, rope; CUDA-vs-CPU incl. CudaModels.AttnRopeFoldSameBytes), tg128
#            arms on qwen3-8b q4_k_m at 3 depths, a d0 trace with the fold, q8_0 arms if time is left
#   pv     : kernels.attn_pv_mma (the decode attention's P x V on tensor cores): gates, --perf at 16383
#            keys, tg128 arms on qwen3-8b q4_k_m at 3 depths, d16384 traces, qwen3-32b arms
#   pre    : kernels.attn_fold_prefetch and pv off as arms beside today's defaults: gates, qwen3-8b q4_k_m
#            tg128 at 3 depths and q8_0 at 0
#   final6 : gates (attn, fused, CUDA-vs-CPU) and the README decode rows with the defaults
#   gates6 : CUDA-vs-CPU model tests + kernel-check fused, attn, rope (the closing commit's gates)
#   first14: kernel-check all + CUDA-vs-CPU on the sm_90a-only build, d0/d4096/d16384 decode timelines
#   levers14: the fourteenth session's same-bytes levers: gates, tg128 arms at 0 / 4096 / 16384 keys
#   final14: CUDA-vs-CPU and the README decode rows with the fourteenth session's defaults
#   tests14: the CUDA-vs-CPU model tests alone
#   levers15: kernels.attn_max_splits gates and arms, ncu stall profiles of the d0 small kernels
#   levers15b: kernels.early_params gates and arms (q4_k_m at 3 depths, q4_0, q8_0)
#   final15: gates and the README decode rows at the fifteenth session's final commit
#   levers16: kernels.mmvs_stage gates (mmvs, mmvs_id, CUDA-vs-CPU), --perf of the staged vs register
#            matvecs, tg128 arms off / long / long_glu / all on q4_k_m (d0, d4096), q8_0, q4_0 (ran at
#            a498746; the lever was dropped, and the phase with it: git show a498746:scripts/device-run.sh)
#   levers16b: kernels.pdl_late_trigger gates (norm / quantize cases, CUDA-vs-CPU), tg128 arms off / norm /
#            norm_quantize on q4_k_m (d0, d4096), q8_0, q4_0, d0 timelines of off and norm_quantize (ran at
#            a4be6c1; the lever was dropped, and the phase with it: git show a4be6c1:scripts/device-run.sh)
#   gates16: kernel-check mmvs_id and CUDA-vs-CPU (the sixteenth session's closing gates)
#   probe16: full ncu sections of the one-token matvec by weight type and shape (Q4_K / Q8_0 / Q6_K
#            head rows, the Q4_K down, the Q4_K GLU) and per-kernel DRAM figures of a d0 decode step
#   ail16  : kernel level, the activation in the interleaved q8s order (MmvsParams::act_il): byte identity and
#            f64 gates, --perf beside the register form, ncu of the Q4_K head in both orders
#   actil17: kernels.mmvs_act_il gates (mmvs_id, the interleaved producers, CUDA-vs-CPU), --perf of
#            the padded order, tg128 arms base / act_il on q4_k_m d0 / d4096, q4_0, q8_0, qwen3-32b
#   q6k18  : kernels.mmvs_act_il_q6k gates, kernel-level Q6_K rows in both orders, tg128 arms
#   final17: closing gates with kernels.mmvs_act_il on, a spilling-cap GLU arm, the README decode rows
#   fb19   : kernels.mmvs_cap_fallback gates (mmvs_id, the capped interleaved GLU rows, CUDA-vs-CPU),
#            --perf of the interleaved GLU at caps 0 / 5 / 6, tg128 arms base / fallback 5 on q4_k_m
#   fb19b  : qwen3-32b arms base / fallback 5, a d0 trace
#   final19: closing gates with kernels.mmvs_cap_fallback = 5, the README decode rows (q4_k_m with
#            an arm of the fallback off)
#   bulk24 : kernels.attn_bulk_stage (one cp.async.bulk per key and cache for the decode attention's tile
#            copies): gates, ncu source counters, tg128 arms (ran at 160eb1a; the form lost and was
#            replaced by kernels.attn_stage16, the phase with it: git show 160eb1a:scripts/device-run.sh)
#   stage24: kernels.attn_stage16 (16-byte K chunks, stepped copy addresses): gates, ncu source counters,
#            tg128 arms (ran at a603fa6; neutral, dropped: git show a603fa6:scripts/device-run.sh)
#   probe  : full ncu sections of the GLU matvec and the depth attention, matvec_v2 vs mmvs
#            times, per-kernel times of a decode step, rp-q4-probe, kernel-check all
#   (later phases describe themselves at their case label; the twenty-ninth session's: rpone29,
#   rpk30, rpk30b, final29 ran; the thirtieth's: gp30, gp30t, final30a, final30b, trace30, gp30q,
#   defer30 ran, gp30u was dropped; nd31 .. nd31d ran; the thirty-second's: nd32 ran, nd32b, sk33,
#   sk33b, nd33 and qp33 are the next; the thirty-sixth's: s36a, s36b, s36d ran and were removed with
#   g1t35 / g1t36 (the Q4_K one-task GLU, dropped), qp33 and mmvf34 (their rows are s37a's and
#   s36c's), s36e and rows37 (folded into s37a): git show f7af970:scripts/device-run.sh; the next session's,
#   in order: s37a (s36e + rows37 in one call: the suite at the two keys via --config, the gates,
#   the README rows with the keys as the base configuration), the flip (no device), fold37 (the
#   RoPE fold off on q8_0 / q4_0), moe37 (the MoE levers on qwen3-30b-a3b q8_0), moe37b (q4_k_m),
#   s36c (the f16 rows, and the thirty-seventh session's attention gates), q5k34, q5k34t, sk33b)
# pp-bench interleaves its arms (bench.interleave, every arm resident): qwen3-32b prefill rows with
# several arms pass --set bench.interleave=false (three arms' weights, split copies and f16 prefill
# copies do not fit one H200 together).
# Carry .device-pack and unpack it first: bash scripts/device-unpack.sh && bash scripts/device-run.sh final $OUT
# Receipts and logs go to OUTDIR (at most 8 files come back).
set -uo pipefail
phase=$1
out=$2
bin=.device/bin
sh=.device/shared
mkdir -p "$out"
log="$out/$phase.log"
exec > >(tee -a "$log") 2>&1
echo "== $phase $(date -u +%FT%TZ)"
synth_dir=/tmp/memra-synth
gpu_info() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used,memory.total --format=csv
}
cuda_vs_cpu() {  # [extra grep alternatives] [lines]: the CUDA-vs-CPU model tests, log in OUTDIR
  # A "quant" pack (device-prepare.sh) leaves out some f32 synth models: their tests are skipped.
  local skip="" t
  for t in Llama:llama Qwen2:qwen2 Qwen3:qwen3 Gemma3:gemma3 Gemma4:gemma4; do
    [ -f "$sh/models/synth/${t#*:}-f32.gguf" ] || skip="$skip:CudaModels.${t%%:*}_F32"
  done
  if [ -n "$skip" ]; then echo "cuda_vs_cpu: f32 synth models not in this pack, skipped: ${skip#:}"; fi
  # suite_args (e.g. --config FILE: the base configuration of every test) and suite_tag (the log's
  # name suffix) are set by a phase around a call; empty by default.
  timeout 150 "$bin/test_backend_cuda_gpu" --shared "$sh" ${skip:+--gtest_filter=-${skip#:}} "${suite_args[@]}" \
    > "$out/test_backend_cuda_gpu$suite_tag.log" 2>&1
  echo "test_backend_cuda_gpu$suite_tag rc=$?"
  grep -E "^\[  (PASSED|FAILED) |FAILED${1:+|$1}" "$out/test_backend_cuda_gpu$suite_tag.log" | tail -n "${2:-10}"
}
suite_args=()
suite_tag=""
synth() {  # preset mix [limit_s]: a gguf-synth file in $synth_dir, its path in $f (delete it with rm -f "$f")
  # The same preset, mix and seed give the same bytes, so a file an earlier call on this (still warm)
  # machine wrote completely ($f.done beside it) is used again: qwen3-32b q4_k_m takes ~100 s to write.
  mkdir -p "$synth_dir"
  f="$synth_dir/$1-$2.gguf"
  if [ -f "$f" ] && [ -f "$f.done" ]; then echo "synth: $f from an earlier call"; return 0; fi
  rm -f "$f.done"
  timeout "${3:-200}" "$bin/gguf-synth" --preset "$1" --mix "$2" --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null &&
    touch "$f.done"
}
tg_on() {  # depths reps limit_s [pp-bench args: arms...]: tg128 rows of the gguf-synth file $f (kept); with arms, an A/A copy of the first (bench.aa_copy)
  local depths=$1 reps=$2 limit=$3; shift 3
  local aa=()
  # (the A/A copy is measured in the arms' rotation: none when the arms run one at a time)
  [[ " $* " == *" --arm "* && " $* " != *"bench.interleave=false"* ]] && aa=(--set bench.aa_copy=true)
  timeout "$limit" "$bin/pp-bench" -m "$f" -p 0 -n 128 -d "$depths" -r "$reps" "$@" "${aa[@]}" --set receipt.hash_model=false \
    --set kernels.prefill_f16_weights=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
}
moe_prefill_arms() {  # pp512 of the MoE file $f: host-routed, device-grouped (dp4a), device-grouped (int8 tensor cores)
  timeout 200 "$bin/pp-bench" -m "$f" -p 512 -n 0 -d 0 -r 5 --arm configs/arm-base.toml \
    --arm configs/arm-moe-device-route-prefill.toml --arm configs/arm-moe-device-route-prefill-mma.toml \
    --set bench.interleave=false --set receipt.hash_model=false \
    --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
}
rows_q4_0_q8_0() {  # the README rows of qwen3-8b q4_0 and q8_0 at the defaults: pp512 + tg128
  for mix in q4_0 q8_0; do
    synth qwen3-8b $mix
    timeout 70 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f"
  done
}
row_32b() {  # limit_s: qwen3-32b q4_k_m pp512 + tg128 at the defaults (the file kept in $f)
  synth qwen3-32b q4_k_m
  timeout "$1" "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
    --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
}
q4km_rows() {  # limit_s [arms...]: qwen3-8b q4_k_m tg128 at 0 / 4096 / 16384 keys (with the arms) and pp512 / pp2048 at the defaults
  local limit=$1; shift
  synth qwen3-8b q4_k_m
  tg_on 0,4096,16384 5 "$limit" "$@"
  timeout 90 "$bin/pp-bench" -m "$f" -p 512,2048 -n 0 -r 5 --set receipt.hash_model=false \
    --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
  rm -f "$f"
}
row_f16() {  # limit_s: qwen3-8b f16 pp512 at the defaults (the file deleted after)
  synth qwen3-8b f16
  timeout "$1" "$bin/pp-bench" -m "$f" -p 512 -n 0 -r 5 --set receipt.hash_model=false \
    --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
  rm -f "$f"
}
traces_at() {  # depths... [-- tag pp-bench args...]: tg128 decode timelines of the gguf-synth file $f at each depth (trace[-tag]-d<depth>.jsonl.gz)
  local depths=() d tag=""
  while (($#)) && [[ $1 != -- ]]; do depths+=("$1"); shift; done
  if (($#)); then shift; tag="-$1"; shift; fi
  for d in "${depths[@]}"; do
    timeout 60 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d $d -r 2 --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false "$@" --trace "$out/trace$tag-d$d.jsonl" \
      --receipt "$out/pp-bench-trace.jsonl" 2>&1 | grep -E "^trace" | head -n 2
    gzip -f "$out/trace$tag-d$d.jsonl"
  done
}
tg() {  # preset mix depths reps limit_s [pp-bench args: arms...]: tg128 rows of a gguf-synth file, deleted after
  local preset=$1 mix=$2; shift 2
  synth "$preset" "$mix"
  tg_on "$@"
  rm -f "$f"
}
kc() {  # limit_s sections filter seed lines: kernel-check gates of the filter, the non-PASS lines' tail
  timeout "$1" "$bin/kernel-check" --section "$2" --filter "$3" --seed "$4" \
    --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n "$5"
}
attn_tiles_call() {  # seed limit_s [pp-bench args: arms...]: every decode attention gate, kernel times at 16384 keys, CUDA-vs-CPU, then qwen3-8b q4_k_m tg128 at 0 / 4096 / 16384 keys with the arms
  local seed=$1 limit=$2; shift 2
  gpu_info
  kc 200 attn attn_decode "$seed" 12
  timeout 100 "$bin/kernel-check" --section attn --perf --seed $((seed + 1)) --filter "n1@16383" \
    --receipt "$out/kernel-check-perf.jsonl" | grep -E "16383" | sed 's/norm_err.*|/|/'
  cuda_vs_cpu "" 4
  synth qwen3-8b q4_k_m
  tg_on 0,4096,16384 5 "$limit" "$@"
  rm -f "$f"
}
tg_mixes() {  # arm mix...: qwen3-8b tg128 at d0 of each mix, arm-base against the arm (each file deleted after)
  local arm=$1 mix
  shift
  for mix in "$@"; do
    synth qwen3-8b "$mix"
    tg_on 0 5 60 --arm configs/arm-base.toml --arm "$arm"
    rm -f "$f"
  done
}
norm_defer_gates() {  # seed: the deferred norm's kernel-check gates (norm_defer/*, mmvs_norm_ss*), summary lines
  local flt
  for flt in norm_defer mmvs_norm_ss; do
    timeout 150 "$bin/kernel-check" --section mmvs_id --filter $flt --seed "$1" --receipt "$out/kernel-check.jsonl" |
      grep -E "FAIL|ERR|kernel-check:" | tail -n 8
  done
}
ncu_src() {  # section tag|kernel-regex|case-regex...: ncu --set full + SASS source counters of one launch each of kernel-check cases, in $out/ncu.tar.gz
  local section=$1 c tag rest kern case_re
  shift
  mkdir -p "$out/ncu"
  for c in "$@"; do
    tag=${c%%|*}; rest=${c#*|}; kern=${rest%%|*}; case_re=${rest#*|}
    timeout 150 ncu --clock-control none --set full --import-source no --kernel-name-base demangled \
      -k "regex:$kern" --launch-count 1 -o "$out/ncu/$tag" -f \
      "$bin/kernel-check" --section "$section" --filter "$case_re" > "$out/ncu/run-$tag.txt" 2>&1
    echo "## $tag rc=$?"; tail -n 2 "$out/ncu/run-$tag.txt"
    ncu -i "$out/ncu/$tag.ncu-rep" --page details > "$out/ncu/details-$tag.txt" 2>&1
    grep -E "Duration|Executed Instructions  |Issued Ipc|Warp Cycles Per Issued|Registers Per|Achieved Occupancy|DRAM Throughput|No Eligible|Dynamic Shared" "$out/ncu/details-$tag.txt" | head -n 12
    ncu -i "$out/ncu/$tag.ncu-rep" --page source --csv --print-source sass > "$out/ncu/source-$tag.csv" 2>&1
  done
  rm -f "$out"/ncu/*.ncu-rep  # too large to come back
  tar czf "$out/ncu.tar.gz" -C "$out" ncu && rm -rf "$out/ncu"
}
gates_call() {  # seed test-grep sections [limit_s]: kernel-check of the sections, then the CUDA-vs-CPU model tests
  gpu_info
  timeout "${4:-120}" "$bin/kernel-check" --section "$3" --seed "$1" \
    --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 6
  cuda_vs_cpu "$2" 6
}
closing_rows() {  # seed test-grep sections [q4_k_m arms...]: a closing call's gates (kernel-check, CUDA-vs-CPU) and the README decode rows
  local seed=$1 tests=$2 sections=$3; shift 3
  gates_call "$seed" "$tests" "$sections"
  tg qwen3-8b q4_k_m 0,4096,16384 5 $(($# ? 200 : 120)) "$@"
  tg qwen3-8b q4_0 0 5 70
  tg qwen3-8b q8_0 0 5 70
  tg qwen3-32b q4_k_m 0 5 150
}
mmvs_perf() {  # seed filter...: kernel-check --perf of the m = 1 mmvs rows of each filter, in $out/kernel-check-perf.jsonl
  local seed=$1 flt; shift
  for flt in "$@"; do
    timeout 90 "$bin/kernel-check" --section mmvs --perf --seed "$seed" --filter "$flt" \
      --receipt "$out/kernel-check-perf.jsonl" | grep -E "/m1" | sed 's/norm_err.*|/|/'
  done
}
ncu_cases() {  # kernel-regex line-grep tag|case...: ncu --set full of one launch of each kernel-check mmvs case, key lines printed, reports in $out/ncu
  local kern=$1 lines=$2 c tag case_name; shift 2
  mkdir -p "$out/ncu"
  for c in "$@"; do
    tag=${c%%|*}; case_name=${c#*|}
    timeout 100 ncu --clock-control none --set full -k regex:"$kern" --launch-count 1 \
      "$bin/kernel-check" --section mmvs --filter "$case_name" > "$out/ncu/ncu-$tag.txt" 2>&1
    echo "## $tag ($case_name) rc=$?"
    grep -E "$lines" "$out/ncu/ncu-$tag.txt" | head -n 18
  done
}
bench() {  # preset mix pp-bench-args...
  local preset=$1 mix=$2; shift 2
  mkdir -p "$synth_dir"
  local f="$synth_dir/$preset-$mix.gguf"
  /usr/bin/time -f "gguf-synth %e s, max RSS %M KB" "$bin/gguf-synth" --preset "$preset" --mix "$mix" --out "$f" --seed 1234 \
    --receipt "$out/gguf-synth.jsonl" || { echo "gguf-synth failed"; return 1; }
  ls -l "$f"
  "$bin/pp-bench" -m "$f" "$@" --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl"
  rm -f "$f"
}
case "$phase" in
  gates)
    gpu_info
    ldd "$bin/run-gen" "$bin/kernel-check" .device/lib/libmemra.so | grep -v -E 'linux-vdso|ld-linux' || true
    "$bin/kernel-check" --list | tail -n 3
    "$bin/kernel-check" --section all --seed 20261129 --receipt "$out/kernel-check.jsonl" | tail -n 60
    "$bin/kernel-check" --section all --perf --seed 7 --receipt "$out/kernel-check.jsonl" | tail -n 80
    [ -x "$bin/rp-q4-probe" ] && "$bin/rp-q4-probe" --receipt "$out/rp-q4-probe.jsonl"
    [ -x "$bin/test_backend_cuda_gpu" ] && "$bin/test_backend_cuda_gpu" --shared "$sh" 2>&1 | tail -n 60
    for be in cuda cpu; do
      "$bin/run-gen" "$sh/models/stories260K.gguf" -p "Once upon a time" -n 32 --backend "$be" \
        --set kv.type_k=f32 --set kv.type_v=f32 --receipt "$out/run-gen.jsonl" | tail -n 5
    done
    ;;
  bench8)
    bench qwen3-8b q4_k_m -p 512,2048 -n 128 -d 0,4096,16384 -r 5
    if [ "${3:-}" = all ]; then
      bench qwen3-8b q8_0 -p 512 -n 128 -d 0 -r 5
      bench qwen3-8b q4_0 -p 512 -n 128 -d 0 -r 5
    fi
    ;;
  bench32)
    bench qwen3-32b q4_k_m -p 512 -n 128 -d 0 -r 5
    ;;
  final)
    # One call with everything, the benchmark rows first (the 600 s call limit cut the last ones
    # before), each step time-boxed: qwen3-8b q4_k_m rows, A/B arms and depths, q4_0 and q8_0 rows,
    # then every kernel-check section, CUDA vs CPU end to end, run-gen, and qwen3-32b if time is left.
    gpu_info
    mkdir -p "$synth_dir"
    f="$synth_dir/qwen3-8b-q4_k_m.gguf"
    "$bin/gguf-synth" --preset qwen3-8b --mix q4_k_m --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
    timeout 80 "$bin/pp-bench" -m "$f" -p 512,2048 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
    timeout 100 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 4096,16384 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
    timeout 120 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-no-kv-append-fusion.toml --arm configs/arm-nopdl.toml \
      --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
    rm -f "$f"
    for mix in q4_0 q8_0; do
      f="$synth_dir/qwen3-8b-$mix.gguf"
      timeout 150 "$bin/gguf-synth" --preset qwen3-8b --mix $mix --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
      timeout 60 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
        --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
      rm -f "$f"
    done
    timeout 280 "$bin/kernel-check" --section all --seed 20261203 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 40
    cuda_vs_cpu "worst normalized" 30
    for be in cuda cpu; do
      timeout 30 "$bin/run-gen" "$sh/models/stories260K.gguf" -p "Once upon a time" -n 32 --backend "$be" \
        --set kv.type_k=f32 --set kv.type_v=f32 --receipt "$out/run-gen.jsonl" | tail -n 2
    done
    timeout 60 "$bin/kernel-check" --section attn --filter 16383 --perf --seed 7 \
      --receipt "$out/kernel-check-perf.jsonl" | tail -n 4
    f="$synth_dir/qwen3-32b-q4_k_m.gguf"
    timeout 200 "$bin/gguf-synth" --preset qwen3-32b --mix q4_k_m --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
    timeout 90 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
    rm -f "$f"
    ;;
  levers)
    # This session's levers in one call (< 10 minutes): the touched kernel-check sections and the
    # CUDA-vs-CPU model tests first, then the qwen3-8b rows with the split_k A/B arm (q4_k_m),
    # the depth rows, q4_0 and q8_0. qwen3-32b is phase "levers32" (its own call).
    gpu_info
    timeout 100 "$bin/kernel-check" --section norm,mmvs,mmvs_id,fused --seed 20261206 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 20
    cuda_vs_cpu "" 10
    mkdir -p "$synth_dir"
    for mix in q4_k_m q4_0 q8_0; do
      f="$synth_dir/qwen3-8b-$mix.gguf"
      timeout 100 "$bin/gguf-synth" --preset qwen3-8b --mix $mix --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
      if [ $mix = q4_k_m ]; then
        timeout 140 "$bin/pp-bench" -m "$f" -p 512,2048 -n 128 -d 0 -r 5 --arm configs/arm-base.toml \
          --arm configs/arm-mmvs-no-split-k.toml --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
        timeout 90 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 4096,16384 -r 5 --set receipt.hash_model=false \
          --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
      else
        timeout 60 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
          --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
      fi
      rm -f "$f"
    done
    ;;
  prefill)
    gpu_info
    timeout 200 "$bin/kernel-check" --section attn,quant --filter prefill --seed 20261210 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 20
    timeout 60 "$bin/kernel-check" --section quant --filter convert --seed 20261210 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 5
    timeout 100 "$bin/kernel-check" --section attn --filter n512@ --perf --seed 7 \
      --receipt "$out/kernel-check-perf.jsonl" | sed 's/norm_err.*|//' | tail -n 6
    cuda_vs_cpu "" 10
    synth qwen3-8b q4_k_m
    timeout 250 "$bin/pp-bench" -m "$f" -p 512,2048 -n 0 -d 0 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-attn-prefill-unstaged.toml --arm configs/arm-no-gemm-x-reuse.toml \
      --set receipt.hash_model=false --trace "$out/trace.jsonl" --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\||^trace" | grep -v "^| [a-z_<>]*kv_append\|^| embed\|^| quantize\|^| rms_norm_kernel<0"
    rm -f "$f"
    ;;
  rows)
    gpu_info
    timeout 240 "$bin/kernel-check" --section attn --filter prefill --seed 20261211 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 20
    timeout 100 "$bin/kernel-check" --section attn --filter 768 --perf --seed 7 \
      --receipt "$out/kernel-check-perf.jsonl" | sed 's/norm_err.*|//' | tail -n 6
    timeout 60 "$bin/kernel-check" --section attn --filter n512@0 --perf --seed 7 \
      --receipt "$out/kernel-check-perf.jsonl" | sed 's/norm_err.*|//' | tail -n 6
    synth qwen3-8b f16
    timeout 120 "$bin/pp-bench" -m "$f" -p 512 -n 0 -d 0 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-attn-prefill-unstaged.toml --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\|"
    rm -f "$f"
    synth qwen3-32b q4_k_m
    timeout 240 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-attn-prefill-unstaged.toml --set bench.interleave=false --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\|"
    rm -f "$f"
    ;;
  final3)
    gpu_info
    timeout 120 "$bin/kernel-check" --section act,quant --seed 20261212 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 10
    cuda_vs_cpu "" 6
    synth qwen3-8b q4_k_m
    timeout 120 "$bin/pp-bench" -m "$f" -p 512,2048 -n 0 -d 0 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-no-gemm-x-reuse.toml --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\|"
    rm -f "$f"
    synth qwen3-32b q4_k_m
    timeout 120 "$bin/pp-bench" -m "$f" -p 512 -n 0 -d 0 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\|"
    rm -f "$f"
    ;;
  final4)
    gpu_info
    timeout 60 "$bin/kernel-check" --section norm --seed 20261213 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 8
    cuda_vs_cpu "" 6
    synth qwen3-8b q4_k_m
    timeout 120 "$bin/pp-bench" -m "$f" -p 512,2048 -n 128 -d 0 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-no-gemm-x-reuse.toml --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\|"
    rm -f "$f"
    ;;
  cap)
    # Register-capped m = 1 mmvs instances (kernels.mmvs_min_blocks[_glu]): byte-identity gates,
    # --perf beside the default rows, tg128 arms on qwen3-8b q4_k_m (d0, d4096), q8_0, q4_0.
    gpu_info
    timeout 120 "$bin/kernel-check" --section mmvs_id --filter mmvs_cap --seed 20261211 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 20
    timeout 200 "$bin/kernel-check" --section mmvs --filter "/m1" --perf --seed 7 --reps 50 \
      --receipt "$out/kernel-check-perf.jsonl" | grep -E "^\[" | grep -v -E "blocked|nosplit|x1536|x2304|4099|25600|5120" \
      | grep -E "4096x4096|6144x4096|4096x12288|151936x4096|12288x4096" | sed -E 's/ +norm_err [^|]*\|/ |/' | head -n 100
    synth qwen3-8b q4_k_m
    timeout 200 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0,4096 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-mmvs-cap-glu6.toml --arm configs/arm-mmvs-cap-glu8.toml --arm configs/arm-mmvs-cap6.toml \
      --arm configs/arm-mmvs-cap8.toml --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f"
    for mix in q8_0 q4_0; do
      synth qwen3-8b $mix
      timeout 100 "$bin/pp-bench" -m "$f" -p 0 -n 128 -r 5 --arm configs/arm-base.toml \
        --arm configs/arm-mmvs-cap-glu6.toml --arm configs/arm-mmvs-cap8.toml --set receipt.hash_model=false \
        --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
      rm -f "$f"
    done
    ;;
  cap2)
    # The plain-matrix register cap alone (kernels.mmvs_min_blocks = 6) on q4_k_m and q8_0, d0.
    gpu_info
    for mix in q4_k_m q8_0; do
      synth qwen3-8b $mix
      timeout 60 "$bin/pp-bench" -m "$f" -p 0 -n 128 -r 5 --arm configs/arm-base.toml \
        --arm configs/arm-mmvs-cap-plain6.toml --set receipt.hash_model=false --set kernels.prefill_f16_weights=false \
        --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
      rm -f "$f"
    done
    ;;
  confirm)
    # The register-cap defaults (both caps at 6, the GLU one where it does not spill) vs uncapped vs
    # the plain-only cap of session 7 (~7 minutes):
    # qwen3-8b q4_0 tg128, q4_k_m tg128 at d0 and 16384, qwen3-32b q4_k_m tg128 / pp512.
    gpu_info
    arms="--arm configs/arm-base.toml --arm configs/arm-mmvs-no-cap.toml --arm configs/arm-mmvs-cap-plain-only.toml"
    synth qwen3-8b q4_0
    timeout 80 "$bin/pp-bench" -m "$f" -p 0 -n 128 -r 5 $arms --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f"
    synth qwen3-8b q4_k_m
    timeout 120 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0,16384 -r 5 $arms --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f"
    synth qwen3-32b q4_k_m
    timeout 180 "$bin/pp-bench" -m "$f" -p 512 -n 128 -r 5 $arms --set bench.interleave=false --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f"
    ;;
  resid)
    # The residual add in the o / down matvec epilogue and the split decode norm (kernels.fuse_residual,
    # kernels.norm_split; measured at f2b5035 with five arms, now the defaults): mmvs_id gates
    # (mmvs_residual/*, rms_norm_q8s_split*/*), CUDA-vs-CPU, then tg128 on qwen3-8b q4_k_m (d0,
    # 4096), q4_0 and q8_0, interleaved arms base / the norm as before (configs/arm-norm-unfused.toml).
    gpu_info
    "$bin/kernel-check" --section mmvs_id --seed 20261205 --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 8
    cuda_vs_cpu "" 4
    arms="--arm configs/arm-base.toml --arm configs/arm-norm-unfused.toml"
    tg qwen3-8b q4_k_m 0,4096 6 200 $arms
    for mix in q4_0 q8_0; do tg qwen3-8b $mix 0 6 100 $arms; done
    ;;
  w2)
    # Rows over 128 tasks on 2 warps (kernels.mmvs_split_max_warps = 2, the default since this
    # call's figures) against 4 (configs/arm-mmvs-split-w4.toml): qwen3-8b q4_k_m tg128 at 0 /
    # 4096 / 16384 and qwen3-32b q4_k_m (its 25600-weight downs: 400 tasks, 6-7 per lane on 2
    # warps), interleaved, ~7 minutes. (Ran at 1bce27b with 4 as the default and the arms base /
    # w2; bench/notes/mmvs.md.)
    gpu_info
    tg qwen3-8b q4_k_m 0,4096,16384 6 200 --arm configs/arm-base.toml --arm configs/arm-mmvs-split-w4.toml
    tg qwen3-32b q4_k_m 0 5 240 --arm configs/arm-base.toml --arm configs/arm-mmvs-split-w4.toml
    ;;
  w3)
    # ~9 minutes. Gates first (the new 6-warp instances, the pre-wait reads of RoPE and attention),
    # then interleaved tg128 arms, then two short d0 traces (defaults; w3) for per-kernel times.
    gpu_info
    timeout 200 "$bin/kernel-check" --section mmvs,mmvs_id,rope,attn --seed 20261208 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 12
    timeout 60 "$bin/kernel-check" --section mmvs --filter "splitw" --perf --seed 7 \
      --receipt "$out/kernel-check-perf.jsonl" | grep -E "4096x12288/m1|5120x25600/m1" | tail -n 12
    cuda_vs_cpu "" 4
    arms="--arm configs/arm-base.toml --arm configs/arm-mmvs-split-w3.toml"
    synth qwen3-8b q4_k_m
    timeout 200 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0,4096,16384 -r 5 $arms --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    for w in 2 3; do
      timeout 40 "$bin/pp-bench" -m "$f" -p 0 -n 32 -r 2 --set receipt.hash_model=false \
        --set kernels.prefill_f16_weights=false --set kernels.mmvs_split_max_warps=$w --trace "$out/trace-w$w.jsonl" \
        --receipt "$out/pp-bench-trace.jsonl" 2>&1 | grep -E "^trace|mmvs|rope|attn|norm" | head -n 16
    done
    gzip -f "$out"/trace-w*.jsonl
    rm -f "$f"
    tg qwen3-8b q8_0 0 6 100 $arms
    ;;
  fold)
    # ~9.5 minutes, each step time-boxed (the 600 s call limit).
    gpu_info
    timeout 150 "$bin/kernel-check" --section fused,attn,rope --seed 20261209 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 12
    timeout 40 "$bin/kernel-check" --section fused --filter attn_decode_rope --perf --seed 7 \
      --receipt "$out/kernel-check-perf.jsonl" | grep -E "n1@(0|4096|16383)/" | tail -n 6
    cuda_vs_cpu "AttnRopeFold" 6
    # (ran at 62a0e21 and c6cb30a with the fold off by default and the arm turning it on; the
    # default is on since, and configs/arm-attn-rope-fold-off.toml is the other arm now)
    arms="--arm configs/arm-base.toml --arm configs/arm-attn-rope-fold-off.toml"
    synth qwen3-8b q4_k_m
    timeout 200 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0,4096,16384 -r 5 $arms --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    timeout 40 "$bin/pp-bench" -m "$f" -p 0 -n 32 -r 2 --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false --set kernels.attn_rope_fold=true --trace "$out/trace-fold.jsonl" \
      --receipt "$out/pp-bench-trace.jsonl" 2>&1 | grep -E "^trace|attn|rope|norm" | head -n 8
    gzip -f "$out"/trace-fold.jsonl
    rm -f "$f"
    tg qwen3-8b q8_0 0 5 90 $arms
    [ "${3:-}" = 32 ] && tg qwen3-32b q4_k_m 0 4 200 $arms
    ;;
  pv)
    # kernels.attn_pv_mma (P x V on tensor cores) as an arm: gates (attn + fused attn_decode_rope,
    # CUDA-vs-CPU incl. AttnPvMmaAgainstOracle / AttnRopeFoldSameBytes), kernel-level --perf at
    # 16383 keys, tg128 arms on qwen3-8b q4_k_m at 3 depths, a d16384 trace of each arm,
    # qwen3-32b (G = 8) at 4096 if time is left. ~9.5 minutes, each step time-boxed.
    gpu_info
    timeout 120 "$bin/kernel-check" --section attn,fused --seed 20261211 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 12
    timeout 40 "$bin/kernel-check" --section attn --filter "n1@16383" --perf --seed 7 \
      --receipt "$out/kernel-check-perf.jsonl" | grep -E "16383" | tail -n 8
    cuda_vs_cpu "AttnPv|AttnRopeFold|pv16" 14
    arms="--arm configs/arm-base.toml --arm configs/arm-attn-pv-mma-off.toml"  # (ran at 2eddd34 with pv off by default and the arm turning it on)
    synth qwen3-8b q4_k_m
    timeout 200 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0,4096,16384 -r 5 $arms --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    if [ -f .device/lib/libcupti.so.13 ]; then  # not in a lean pack
      for pv in false true; do
        timeout 40 "$bin/pp-bench" -m "$f" -p 0 -n 32 -d 16384 -r 2 --set receipt.hash_model=false \
          --set kernels.prefill_f16_weights=false --set kernels.attn_pv_mma=$pv --trace "$out/trace-d16384-pv-$pv.jsonl" \
          --receipt "$out/pp-bench-trace.jsonl" 2>&1 | grep -E "^trace|attn" | head -n 5
        gzip -f "$out/trace-d16384-pv-$pv.jsonl"
      done
    fi
    rm -f "$f"
    tg qwen3-32b q4_k_m 4096 3 170 $arms
    ;;
  pre)
    # kernels.attn_fold_prefetch (the fold's first tile of K/V before the wait) and the pv default
    # against pv off, interleaved: gates (attn, fused; CUDA-vs-CPU), qwen3-8b q4_k_m tg128 at 3
    # depths and q8_0 at 0 with the three arms. ~9.5 minutes, each step time-boxed.
    gpu_info
    timeout 110 "$bin/kernel-check" --section attn,fused --seed 20261212 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 12
    cuda_vs_cpu "AttnPv|AttnRopeFold" 6
    # (ran at 12001cf with the prefetch off by default and the arm turning it on)
    arms="--arm configs/arm-base.toml --arm configs/arm-attn-fold-prefetch-off.toml --arm configs/arm-attn-pv-mma-off.toml"
    tg qwen3-8b q4_k_m 0,4096,16384 5 230 $arms
    tg qwen3-8b q8_0 0 5 100 $arms
    ;;
  final6)
    # The closing call of 2026-12-02 (thirteenth session): gates at the final commit (attn, fused,
    # CUDA-vs-CPU) and the README rows with today's defaults: qwen3-8b q4_k_m at 3 depths, q4_0 and
    # q8_0 at 0, qwen3-32b q4_k_m at 0.
    closing_rows 20261213 "AttnPv|AttnRopeFold" attn,fused
    ;;
  first14)
    # 2026-12-02 (fourteenth session), the first call: the sm_90a-only release build
    # (MEMRA_CUDA_ARCH=90a-real) on the H200 for the first time (kernel-check all, CUDA-vs-CPU), then
    # CUPTI timelines of the qwen3-8b q4_k_m decode step at 0, 4096 and 16384 keys with the defaults
    # (per-kernel times for choosing the next levers). ~7 minutes.
    gpu_info
    timeout 280 "$bin/kernel-check" --section all --seed 20261214 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 8
    cuda_vs_cpu "" 4
    synth qwen3-8b q4_k_m
    for d in 0 4096 16384; do
      timeout 60 "$bin/pp-bench" -m "$f" -p 0 -n 32 -d $d -r 2 --set receipt.hash_model=false \
        --set kernels.prefill_f16_weights=false --trace "$out/trace-d$d.jsonl" --receipt "$out/pp-bench-trace.jsonl" 2>&1 |
        grep -E "^\||^trace" | head -n 24
      gzip -f "$out/trace-d$d.jsonl"
    done
    rm -f "$f"
    ;;
  levers14)
    # 2026-12-02 (fourteenth session): the session's levers as arms, each the same bytes as the
    # default (gates first: kernel-check mmvs_id, attn, fused; CUDA-vs-CPU incl. the new model
    # tests), then qwen3-8b q4_k_m tg128 at depth 0 (mixed q/k/v launch, Q6_K rows on 4 warps,
    # one-split rows written directly, plain matrices capped at 8 CTAs per SM, all together) and at 4096 / 16384 (mixed q/k/v, combine
    # preload, K staged in every tile, all together). Interleaved arms, median of 5. ~8 minutes.
    # (Ran at b381530 with every lever off by default. The dropped levers' arms are gone with them
    # (one-split rows written directly, Q6_K rows on 4 warps, the plain cap at 8, the all-levers arm);
    # the kept ones are default now, their files the -off arms: bench/notes/attn-decode.md, mmvs.md.)
    gpu_info
    timeout 170 "$bin/kernel-check" --section mmvs_id,attn,fused --seed 20261215 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 8
    cuda_vs_cpu "MixedTypes|SingleSplit|KStage" 8
    synth qwen3-8b q4_k_m
    timeout 110 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-mmvs-mixed-types.toml --arm configs/arm-mmvs-split-q6k-w4.toml \
      --arm configs/arm-attn-single-split-direct.toml --arm configs/arm-mmvs-plain-cap8.toml --arm configs/arm-levers14-all.toml \
      --set receipt.hash_model=false --set kernels.prefill_f16_weights=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    timeout 200 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 4096,16384 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-mmvs-mixed-types.toml --arm configs/arm-attn-combine-preload.toml \
      --arm configs/arm-attn-fold-k-stage.toml --arm configs/arm-levers14-all.toml \
      --set receipt.hash_model=false --set kernels.prefill_f16_weights=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f"
    ;;
  final14)
    # The closing call of 2026-12-02 (fourteenth session): gates at the final commit (kernel-check
    # attn, fused, mmvs_id; CUDA-vs-CPU) and the README rows with the new defaults: qwen3-8b q4_k_m
    # at 3 depths (with the mixed q/k/v launch off as a second arm: its d0 ratio again), q4_0 and
    # q8_0 at 0, qwen3-32b q4_k_m at 0. ~9 minutes.
    closing_rows 20261216 "MixedTypes|KStage" attn,fused,mmvs_id --arm configs/arm-base.toml \
      --arm configs/arm-mmvs-mixed-types-off.toml
    ;;
  levers15)
    # 2026-12-02 (fifteenth session): gates of kernels.attn_max_splits (kernel-check attn, fused:
    # the >64-split tolerance, combine and fold cases), tg128 arms base (64) vs 96 at 0 / 4096 /
    # 16384 keys (n_ctx 16512: 64 vs 66 splits), then per-kernel stall profiles (ncu, one launch
    # each, caches as they are) of the small kernels that bound the d0 step: the decode attention
    # and its combine, the norm, the quantize and a Q4_K down, from run-gen decode steps; and the
    # split kernel / combine at 16513 keys from kernel-check. ~9 minutes.
    gpu_info
    timeout 150 "$bin/kernel-check" --section attn,fused --seed 20261217 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 8
    # (ran at abf8b2d with 64 the default and configs/arm-attn-max-splits-96.toml, since renamed to
    # the -64 arm turning the kept default off)
    tg qwen3-8b q4_k_m 0,4096,16384 5 230 --arm configs/arm-base.toml --arm configs/arm-attn-max-splits-64.toml
    export LD_LIBRARY_PATH=$PWD/.device/lib
    stalls='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
    mkdir -p "$out/diag"
    synth qwen3-8b q4_k_m
    # d0 timelines with the defaults and with the matvecs' early weight loads off: whether the small
    # kernels' exposed time is their own chain or a wait behind the next matvec's preloaded weights.
    for arm in base nopreload; do
      set_arm=""; [ "$arm" = nopreload ] && set_arm="--set kernels.mmvs_preload=false"
      timeout 60 "$bin/pp-bench" -m "$f" -p 0 -n 32 -r 2 --set receipt.hash_model=false $set_arm \
        --set kernels.prefill_f16_weights=false --trace "$out/diag/trace-d0-$arm.jsonl" --receipt "$out/pp-bench-trace.jsonl" 2>&1 |
        grep -E "^trace|attn|norm|quantize|kernel \|" | head -n 12
    done
    timeout 100 ncu --clock-control none --cache-control none --metrics "gpu__time_duration.sum,smsp__average_warp_latency_per_inst_issued.ratio,$stalls" \
      -k regex:"attn_decode_gqa|attn_decode_combine|rms_norm_kernel|quantize_q8s|mmvs_kernel_cap" --launch-skip 400 --launch-count 12 \
      "$bin/run-gen" "$f" -p "a" -n 4 --receipt /tmp/ncu-run-gen.jsonl > "$out/diag/ncu-d0-stalls.txt" 2>&1
    echo "ncu d0 rc=$?"
    rm -f "$f"
    timeout 60 ncu --clock-control none --cache-control none --metrics "gpu__time_duration.sum,smsp__average_warp_latency_per_inst_issued.ratio,$stalls" \
      -k regex:"attn_decode_gqa|attn_decode_combine" \
      "$bin/kernel-check" --section fused --filter "_ks_ms96/q8_0-q5_1/32-8x128/n1@16512" > "$out/diag/ncu-d16512-stalls.txt" 2>&1
    echo "ncu d16512 rc=$?"
    python3 - "$out/diag" <<'PY'
import re, sys, pathlib
for f in sorted(pathlib.Path(sys.argv[1]).glob("ncu-*-stalls.txt")):
    print("##", f.name)
    kern = None
    for line in f.read_text().splitlines():
        m = re.match(r"\s+(\S.*?)\s+\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", line)
        if m:
            kern = m.group(1)[:60]
            continue
        t = line.split()
        if len(t) >= 3 and (t[0].startswith("smsp__average_warps_issue_stalled") or t[0] in ("gpu__time_duration.sum", "smsp__average_warp_latency_per_inst_issued.ratio")):
            try:
                v = float(t[-1].replace(",", ""))
            except ValueError:
                continue
            if t[0].startswith("smsp__average_warps") and v < 0.5:
                continue
            name = t[0].replace("smsp__average_warps_issue_stalled_", "").replace("_per_issue_active.ratio", "")
            print(f"  {kern}: {name} {v}")
PY
    tar czf "$out/diag.tar.gz" -C "$out" diag && rm -rf "$out/diag"
    ;;
  levers15b)
    # kernels.early_params (the decode attention, combine and quantize read their parameters before
    # the PDL wait; the same bytes) with attn_max_splits 96 the default: gates (kernel-check attn,
    # fused, the quantize cases; CUDA-vs-CPU incl. EarlyParamsSameBytes), then tg128 arms base /
    # early params / the old split cap at 0 / 4096 / 16384 keys, q4_0 and q8_0 base / early at 0.
    # ~8 minutes. (Ran at 15aaf33. kernels.early_params was dropped after this call: its GPU test
    # CudaModels.EarlyParamsSameBytes failed; code, key, cases, test and arm removed,
    # bench/notes/attn-decode.md.)
    gpu_info
    timeout 120 "$bin/kernel-check" --section attn,fused --seed 20261218 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 6
    timeout 40 "$bin/kernel-check" --section mmvs --filter quantize_q8s --seed 20261218 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 4
    cuda_vs_cpu "EarlyParams|KStage" 6
    tg qwen3-8b q4_k_m 0,4096,16384 5 230 --arm configs/arm-base.toml --arm configs/arm-early-params.toml \
      --arm configs/arm-attn-max-splits-64.toml
    tg qwen3-8b q4_0 0 5 80 --arm configs/arm-base.toml --arm configs/arm-early-params.toml
    tg qwen3-8b q8_0 0 5 80 --arm configs/arm-base.toml --arm configs/arm-early-params.toml
    ;;
  final15)
    # The closing call of 2026-12-02 (fifteenth session): gates at the final commit (kernel-check
    # attn, fused; CUDA-vs-CPU) and the README decode rows with the final defaults (attn_max_splits
    # 96): qwen3-8b q4_k_m at 0 / 4096 / 16384 keys, q4_0 and q8_0 at 0, qwen3-32b q4_k_m at 0.
    # ~7 minutes.
    closing_rows 20261219 "KStage|RopeFold" attn,fused
    ;;
  gates16)
    # The closing call of 2026-12-02 (sixteenth session): kernel-check mmvs_id (every byte identity
    # of the matvec, incl. mmvs_ail after the dispatch refactor) and the CUDA-vs-CPU model tests.
    gates_call 20261225 "MixedTypes" mmvs_id 150
    ;;
  tests14)
    # The CUDA-vs-CPU model tests alone (a final commit whose only change since the last gates is
    # in those tests). ~1 minute.
    gpu_info
    cuda_vs_cpu "AttnRopeFold|KStage|MixedTypes" 8
    ;;
  gates6)
    gates_call 20261210 "AttnRopeFold" fused,attn,rope 150
    ;;
  rows2)
    # Today's defaults (the residual add in the matvec epilogue, the 8-block norm, the attention's q
    # prologue through shared memory) against the norm as before (configs/arm-norm-unfused.toml),
    # ~8 minutes: kernel-check mmvs_id + attn_decode gates, CUDA-vs-CPU, qwen3-8b q4_k_m tg128 at
    # 0 / 4096 / 16384 and q4_0, q8_0 at 0 (interleaved arms), a d0 trace of the defaults.
    gpu_info
    timeout 150 "$bin/kernel-check" --section mmvs_id,attn --seed 20261206 --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 8
    cuda_vs_cpu "" 4
    arms="--arm configs/arm-base.toml --arm configs/arm-norm-unfused.toml"
    synth qwen3-8b q4_k_m
    timeout 240 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0,4096,16384 -r 5 $arms --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    timeout 60 "$bin/pp-bench" -m "$f" -p 0 -n 32 -r 2 --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false --trace "$out/trace.jsonl" --receipt "$out/pp-bench-trace.jsonl" 2>&1 |
      grep -E "^\||^trace" | head -n 20
    rm -f "$f"
    for mix in q4_0 q8_0; do tg qwen3-8b $mix 0 6 100 $arms; done
    ;;
  rows32)
    # qwen3-32b q4_k_m with today's defaults vs the norm as before: tg128, two resident arms (~4
    # minutes; the prefill path is not touched by either).
    gpu_info
    tg qwen3-32b q4_k_m 0 5 200 --arm configs/arm-base.toml --arm configs/arm-norm-unfused.toml
    ;;
  attnpre)
    # The decode attention's split-0 q load and the combine's split-0 loads issued beside the pos
    # load (same bits; ~4 minutes): kernel-check attn, CUDA-vs-CPU, qwen3-8b q4_k_m tg128 at 0 /
    # 4096 with the defaults (to compare with rows2's base arm: cross-run), a d0 trace.
    gpu_info
    timeout 150 "$bin/kernel-check" --section attn --seed 20261207 --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 8
    cuda_vs_cpu "" 4
    synth qwen3-8b q4_k_m
    timeout 120 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0,4096 -r 6 --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    timeout 60 "$bin/pp-bench" -m "$f" -p 0 -n 32 -r 2 --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false --trace "$out/trace.jsonl" --receipt "$out/pp-bench-trace.jsonl" 2>&1 |
      grep -E "^trace|attn|norm|kernel \|"
    rm -f "$f"
    ;;
  splitw)
    # The warps per long mmvs row (~7 minutes): kernel-check mmvs + mmvs_id (f64 references and
    # byte identities incl. kernels.mmvs_split_max_warps = 2), --perf of the down shapes (4, 2 and
    # 1 warps per row), CUDA-vs-CPU, then tg128 on qwen3-8b q4_k_m (d0) and q8_0, interleaved
    # arms base / 2 warps per long row / one warp per row (qwen3-32b: phase splitw32).
    gpu_info
    "$bin/kernel-check" --section mmvs_id --seed 20261203 --receipt "$out/kernel-check.jsonl" | tail -n 2
    timeout 200 "$bin/kernel-check" --section mmvs --seed 20261203 --receipt "$out/kernel-check.jsonl" | tail -n 2
    for shp in 4096x12288/m1 5120x25600/m1; do
      timeout 100 "$bin/kernel-check" --section mmvs --filter "$shp" --perf --seed 7 \
        --receipt "$out/kernel-check-perf.jsonl" | grep -E "us" | grep -v cap | sed -E 's/norm_err [^|]*\| //'
    done
    cuda_vs_cpu "" 4
    arms="--arm configs/arm-base.toml --arm configs/arm-mmvs-split-w4.toml --arm configs/arm-mmvs-no-split-k.toml"
    for mix in q4_k_m q8_0; do tg qwen3-8b $mix 0 6 80 $arms; done
    ;;
  splitw32)
    # The same arms on qwen3-32b q4_k_m tg128 (~5 minutes; at ef2c9a2 the splitw phase ran out of
    # its 600 s in this row, so it stands alone): CUDA-vs-CPU, then the interleaved arms.
    gpu_info
    cuda_vs_cpu "" 4
    arms="--arm configs/arm-base.toml --arm configs/arm-mmvs-split-w4.toml --arm configs/arm-mmvs-no-split-k.toml"
    tg qwen3-32b q4_k_m 0 5 200 $arms
    ;;
  remeasure)
    # The small levers again, now with interleaved arms (bench.interleave, every arm resident,
    # repetitions rotating), and the cost of a kernel boundary (~8 minutes): CUDA-vs-CPU, then
    # tg128 on qwen3-8b q4_k_m (d0, 4096), q4_0 and q8_0, arms base / no cap / plain cap only /
    # head capped / 1 and 4 empty kernels after each decode attention.
    gpu_info
    cuda_vs_cpu "" 6
    arms="--arm configs/arm-base.toml --arm configs/arm-mmvs-no-cap.toml --arm configs/arm-mmvs-cap-plain-only.toml \
      --arm configs/arm-mmvs-head-capped.toml --arm configs/arm-probe-boundaries-1.toml --arm configs/arm-probe-boundaries-4.toml"
    tg qwen3-8b q4_k_m 0,4096 6 240 $arms
    for mix in q4_0 q8_0; do tg qwen3-8b $mix 0 6 100 $arms; done
    ;;
  final5)
    # The session's closing rows with today's defaults (GLU cap 6 no-spill, uncapped head), each
    # beside the capped head (configs/arm-mmvs-head-capped.toml) (~8 minutes): CUDA-vs-CPU, then
    # tg128 on qwen3-8b q4_k_m (d0, 4096, 16384), q4_0, q8_0 and qwen3-32b q4_k_m.
    gpu_info
    cuda_vs_cpu "" 6
    arms="--arm configs/arm-base.toml --arm configs/arm-mmvs-head-capped.toml"
    synth qwen3-8b q4_k_m
    timeout 150 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0,4096,16384 -r 5 $arms --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f"
    for mix in q4_0 q8_0; do tg qwen3-8b $mix 0 5 70 $arms; done
    tg qwen3-32b q4_k_m 0 5 120 $arms
    ;;
  first)
    # A session's first call (~7 minutes): every kernel-check section and the CUDA-vs-CPU model
    # tests.
    gpu_info
    timeout 360 "$bin/kernel-check" --section all --seed 20261208 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 30
    cuda_vs_cpu "" 10
    ;;
  attnq8)
    # The int8-score decode attention (kernels.attn_q8_scores) and the first CUPTI timelines
    # (~5 minutes): the attn section (every q8i case against its naive twin), its --perf at 16383
    # keys, the CUDA-vs-CPU tests (f16 prefill copies now on by default), then qwen3-8b q4_k_m
    # tg128 at depths 0 / 4096 / 16384, base vs the old attention (configs/arm-attn-direct.toml;
    # in 38c6caf this arm was the int8 scores alone), each decode row traced.
    gpu_info
    timeout 120 "$bin/kernel-check" --section attn --seed 20261209 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 20
    timeout 60 "$bin/kernel-check" --section attn --filter 16383 --perf --seed 7 \
      --receipt "$out/kernel-check-perf.jsonl" | sed 's/norm_err.*|//' | tail -n 4
    cuda_vs_cpu "" 10
    mkdir -p "$synth_dir"
    f="$synth_dir/qwen3-8b-q4_k_m.gguf"
    timeout 100 "$bin/gguf-synth" --preset qwen3-8b --mix q4_k_m --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
    timeout 200 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0,4096,16384 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-attn-direct.toml --set receipt.hash_model=false --trace "$out/trace.jsonl" \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\||^trace"
    rm -f "$f"
    ;;
  levers2)
    # The decode-attention levers (int8 scores, V staged through shared memory; on by default since
    # f3764c9 measured them as arms) against the direct path: attn gates, qwen3-8b q4_k_m at three
    # depths, plus the prefill rows (~6 minutes).
    gpu_info
    timeout 120 "$bin/kernel-check" --section attn --seed 20261210 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 20
    timeout 60 "$bin/kernel-check" --section attn --filter 16383 --perf --seed 7 \
      --receipt "$out/kernel-check-perf.jsonl" | sed 's/norm_err.*|//' | grep -E "PASS|FAIL"
    cuda_vs_cpu "" 10
    mkdir -p "$synth_dir"
    f="$synth_dir/qwen3-8b-q4_k_m.gguf"
    timeout 100 "$bin/gguf-synth" --preset qwen3-8b --mix q4_k_m --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
    timeout 240 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0,4096,16384 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-attn-direct.toml \
      --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\||^device"
    timeout 60 "$bin/pp-bench" -m "$f" -p 512,2048 -n 0 -d 0 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
    rm -f "$f"
    ;;
  final2)
    # The rows of the other mixes with the session's defaults (~8 minutes): the CUDA-vs-CPU model
    # tests with them, qwen3-8b q4_0 and q8_0 tg128 / pp512, qwen3-32b q4_k_m tg128 / pp512 (f16
    # prefill copies: +65 GB at load).
    gpu_info
    cuda_vs_cpu "worst" 12
    mkdir -p "$synth_dir"
    for mix in q4_0 q8_0; do
      f="$synth_dir/qwen3-8b-$mix.gguf"
      timeout 100 "$bin/gguf-synth" --preset qwen3-8b --mix $mix --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
      timeout 60 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
        --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\||^device"
      rm -f "$f"
    done
    f="$synth_dir/qwen3-32b-q4_k_m.gguf"
    timeout 170 "$bin/gguf-synth" --preset qwen3-32b --mix q4_k_m --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
    timeout 150 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\||^device"
    rm -f "$f"
    ;;
  gates2)
    # Correctness of a session's final commit (~6 minutes): the CUDA-vs-CPU tests, run-gen on
    # stories260K on both backends, every kernel-check section.
    cuda_vs_cpu "^attn" 14
    for be in cuda cpu; do
      timeout 30 "$bin/run-gen" "$sh/models/stories260K.gguf" -p "Once upon a time" -n 32 --backend "$be" \
        --set kv.type_k=f32 --set kv.type_v=f32 --receipt "$out/run-gen.jsonl" | tail -n 2
    done
    timeout 300 "$bin/kernel-check" --section all --seed 20261211 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 30
    ;;
  combine)
    # The shared-memory combine vs the old one (~2.5 minutes): the decode attention gates, then
    # qwen3-8b q4_k_m tg128 at three depths with configs/arm-attn-combine-direct.toml.
    timeout 60 "$bin/kernel-check" --section attn --filter attn_decode --seed 20261212 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 12
    mkdir -p "$synth_dir"
    f="$synth_dir/qwen3-8b-q4_k_m.gguf"
    timeout 100 "$bin/gguf-synth" --preset qwen3-8b --mix q4_k_m --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
    timeout 120 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0,4096,16384 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-attn-combine-direct.toml --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\|"
    rm -f "$f"
    ;;
  arms)
    # The split_k A/B on every qwen3-8b mix (tg128 and pp512, base vs one warp per row), after the
    # norm and mmvs_id gates; ~4 minutes.
    timeout 40 "$bin/kernel-check" --section norm,mmvs_id --seed 20261207 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 20
    mkdir -p "$synth_dir"
    for mix in q4_k_m q4_0 q8_0; do
      f="$synth_dir/qwen3-8b-$mix.gguf"
      timeout 100 "$bin/gguf-synth" --preset qwen3-8b --mix $mix --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
      timeout 90 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --arm configs/arm-base.toml \
        --arm configs/arm-mmvs-no-split-k.toml --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
      [ $mix = q4_k_m ] && timeout 40 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 4096 -r 5 --set receipt.hash_model=false \
        --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
      rm -f "$f"
    done
    ;;
  levers32)
    mkdir -p "$synth_dir"
    f="$synth_dir/qwen3-32b-q4_k_m.gguf"
    timeout 150 "$bin/gguf-synth" --preset qwen3-32b --mix q4_k_m --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
    if [ "${3:-}" = arms ]; then
      timeout 200 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --arm configs/arm-base.toml \
        --arm configs/arm-mmvs-no-split-k.toml --set bench.interleave=false --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
    else
      timeout 120 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
        --receipt "$out/pp-bench.jsonl" 2>&1 | grep "^|"
    fi
    rm -f "$f"
    ;;
  ail16)
    # 2026-12-02 (sixteenth session): does a contiguous activation load lift the L1/TEX-bound Q4_K /
    # Q6_K matvecs (probe16) toward the DRAM limit? Kernel level only (no q8s producer writes the
    # order yet). Gates: kernel-check mmvs_id mmvs_ail (bytes vs the plain order), mmvs mmvs_ail*
    # (f64); --perf of mmvs_ail_cap6 / mmvs_ref_cap6 / mmvs_ail_glu / mmvs_glu; ncu of the Q4_K and
    # Q6_K heads in the interleaved order. ~2 minutes. (Ran at bc1dc26: bench/notes/mmvs-act-il.md.)
    gpu_info
    export LD_LIBRARY_PATH=$PWD/.device/lib
    timeout 60 "$bin/kernel-check" --section mmvs_id --filter mmvs_ail --seed 20261223 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 4
    timeout 120 "$bin/kernel-check" --section mmvs --filter mmvs_ail --seed 20261223 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 4
    for flt in mmvs_ail_cap6 mmvs_ref_cap6 mmvs_ail_glu mmvs_glu/; do
      timeout 90 "$bin/kernel-check" --section mmvs --perf --seed 20261224 --filter "$flt" \
        --receipt "$out/kernel-check-perf.jsonl" | grep -E "x4096/m1|x12288/m1|x14336/m1|x2304/m1" | sed 's/norm_err.*|/|/'
    done
    ncu_cases mmvs "^  void|Duration|DRAM Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|Registers Per|Achieved Occupancy|excessive sectors" \
      "q4k-head-ail|mmvs_ail_cap6/Q4_K/151936x4096/m1" "q6k-head-ail|mmvs_ail_cap6/Q6_K/151936x4096/m1" \
      "q4k-head-ref|mmvs_ref_cap6/Q4_K/151936x4096/m1"
    tar czf "$out/ncu.tar.gz" -C "$out" ncu && rm -rf "$out/ncu"
    ;;
  actil17)
    # 2026-12-02 (seventeenth session): kernels.mmvs_act_il wired end to end (the norms, the attention
    # combine and the quantizer write the one-token q8s planes in the interleaved order, every m = 1
    # mmvs launch reads it). Gates: kernel-check mmvs_id (all: the launcher changed) and the
    # interleaved producers (mmvs quantize_q8s_il, attn q8s_il), mmvs mmvs_ail* f64 rows,
    # CUDA-vs-CPU incl. CudaModels.MmvsActIlSameBytes; --perf of mmvs_ail_cap6 / mmvs_ref_cap6 (the
    # padded order); tg128 arms base / act_il (interleaved) on q4_k_m d0 / d4096, q4_0, q8_0, 32b.
    gpu_info
    timeout 150 "$bin/kernel-check" --section mmvs_id --seed 20261225 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 4
    for sec in mmvs attn; do
      timeout 90 "$bin/kernel-check" --section $sec --filter _il --seed 20261225 \
        --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 3
    done
    timeout 120 "$bin/kernel-check" --section mmvs --filter mmvs_ail --seed 20261225 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 3
    cuda_vs_cpu "MmvsActIl" 8
    mmvs_perf 20261226 mmvs_ail_cap6 mmvs_ref_cap6
    arms="--arm configs/arm-base.toml --arm configs/arm-mmvs-act-il.toml"
    tg qwen3-8b q4_k_m 0,4096 5 150 $arms
    tg qwen3-8b q4_0 0 5 80 $arms
    tg qwen3-8b q8_0 0 5 80 $arms
    tg qwen3-32b q4_k_m 0 5 130 $arms
    ;;
  q6k18)
    # 2026-12-02 (eighteenth session): kernels.mmvs_act_il_q6k (the activation quantized for a
    # Q6_K-only matvec in the Q6_K variant of the interleaved order). Gates: kernel-check mmvs_id
    # (all: the Q6_K task's accessor changed), mmvs q6k rows (the quantizer vs CPU, the f64 rows),
    # CUDA-vs-CPU incl. CudaModels.MmvsActIlSameBytes; --perf of the Q6_K rows in both orders;
    # tg128 arms base / act_il_q6k on q4_k_m d0 / d4096 and qwen3-32b q4_k_m.
    gpu_info
    timeout 150 "$bin/kernel-check" --section mmvs_id --seed 20261228 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 4
    timeout 90 "$bin/kernel-check" --section mmvs --filter q6k --seed 20261228 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 3
    cuda_vs_cpu "MmvsActIl" 8
    mmvs_perf 20261229 mmvs_ail_cap6/Q6_K mmvs_ail_q6k_cap6/Q6_K
    arms="--arm configs/arm-base.toml --arm configs/arm-mmvs-act-il-q6k.toml"
    tg qwen3-8b q4_k_m 0,4096 6 150 $arms
    tg qwen3-32b q4_k_m 0 5 150 $arms
    ;;
  bulk23)
    # kernels.norm_bulk_load / kernels.quantize_bulk_load (the short kernels' inputs by one bulk copy
    # after the PDL wait): gates kernel-check mmvs_id rms_norm_q8s*bulk* (bytes vs the plain loads),
    # mmvs quantize_q8s*bulk* (bytes vs the CPU quantizer), CUDA-vs-CPU incl.
    # SmallKernelBulkLoadSameBytes; tg128 arms base / norm / quantize / both on qwen3-8b q4_k_m at
    # 0 and 4096 keys, a d0 trace with both, then base / both on q4_0 and q8_0.
    gpu_info
    kc 100 mmvs_id bulk 20261404 4
    kc 100 mmvs bulk 20261404 4
    cuda_vs_cpu "SmallKernelBulk" 8
    synth qwen3-8b q4_k_m
    tg_on 0,4096 5 200 --arm configs/arm-base.toml --arm configs/arm-norm-bulk.toml \
      --arm configs/arm-quantize-bulk.toml --arm configs/arm-small-bulk.toml
    timeout 60 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0 -r 2 --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false --set kernels.norm_bulk_load=true --set kernels.quantize_bulk_load=true \
      --trace "$out/trace-d0-bulk.jsonl" --receipt "$out/pp-bench-trace.jsonl" 2>&1 | grep -E "^trace|norm|quantize" | head -n 8
    gzip -f "$out"/trace-d0-bulk.jsonl
    rm -f "$f"
    tg qwen3-8b q4_0 0 5 80 --arm configs/arm-base.toml --arm configs/arm-small-bulk.toml
    tg qwen3-8b q8_0 0 5 80 --arm configs/arm-base.toml --arm configs/arm-small-bulk.toml
    ;;
  skip23)
    # kernels.attn_one_split_no_combine (default true: no combine launch in a step whose rows all
    # have at most 128 keys): gates (kernel-check attn no_combine_vs_combine and
    # one_split_direct_vs_combine, CUDA-vs-CPU incl. AttnOneSplitNoCombineSameBytes), then qwen3-8b
    # q4_k_m tg128 at 0 / 4096 / 16384 keys, base (the defaults) vs the key off (the README rows at
    # the defaults from the base arm), pp512 / pp2048 at the defaults.
    gpu_info
    kc 60 attn no_combine 20261503 4
    kc 60 attn one_split_direct 20261504 4
    cuda_vs_cpu "NoCombine|HeadSplit" 8
    q4km_rows 200 --arm configs/arm-base.toml --arm configs/arm-attn-no-combine-off.toml
    ;;
  rows24)
    # The twenty-fourth session's first call: the CUDA-vs-CPU tests at the defaults (the
    # decode_across_128_same refactor's first GPU run), qwen3-8b q4_k_m decode timelines at 4096 /
    # 16384 keys (the combine's share since the preload), the README rows not re-measured since
    # the attention changes: qwen3-32b q4_k_m pp512 + tg128, qwen3-8b f16 pp512.
    gpu_info
    cuda_vs_cpu "" 4
    synth qwen3-8b q4_k_m
    traces_at 4096 16384
    rm -f "$f"
    row_32b 130
    rm -f "$f"
    row_f16 80
    ;;
  first27)
    # Run in the twenty-seventh session (receipts/h200/logs/first27-f25e44c-20261204.log.gz): the gates
    # and tg128 of kernels.attn_f16_k_ring's fixed order (with configs/arm-attn-f16-k-ring.toml as
    # the second arm, since removed with the key), then ncu_src attn of the f16 tile kernel and the
    # combine on attn_decode_f16mma/f16-f16/32-8x128/n1@16383.
    echo "first27: its arm (kernels.attn_f16_k_ring) is removed; see its log" >&2
    exit 2
    ;;
  final30a)
    # The thirtieth session's closing call (1 of 2): the Q4_K SiLU GLU pairs on rows of 5120 weights and
    # more (kernels.mmvs_glu_pairs = ["q4_k"], kernels.mmvs_glu_pairs_min_k = 5120; inert on qwen3-8b)
    # and the row-pair head at 6 (kernels.mmvs_min_blocks_rp_head) as the defaults: the mmvs_gp / mmvs_rp
    # gates, CUDA-vs-CPU, the README tg128 rows of qwen3-8b q4_k_m at 0 / 4096 / 16384 keys with the
    # head uncapped as the arm (reversed A/B), q8_0 and q4_0 the same at 0 keys; d0 timelines of the
    # defaults and of the GLU pairs on the 8B's 4096-weight rows (min_k 0, their 0.990x in gp30t).
    gpu_info
    for flt in mmvs_gp mmvs_rp; do
      timeout 60 "$bin/kernel-check" --section mmvs_id --filter $flt --seed 20263030 --receipt "$out/kernel-check.jsonl" | grep -E "FAIL|ERR|kernel-check:" | tail -n 8
    done
    cuda_vs_cpu "RowPairs" 6
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 5 200 --arm configs/arm-base.toml --arm configs/arm-mmvs-rp-head0.toml
    traces_at 0
    traces_at 0 -- gp4096 --set kernels.mmvs_glu_pairs_min_k=0
    rm -f "$f"
    tg_mixes configs/arm-mmvs-rp-head0.toml q8_0 q4_0
    ;;
  final30b)
    # The thirtieth session's closing call (2 of 2): qwen3-32b q4_k_m tg128, the GLU pairs off as the arm
    # (the reversed A/B of gp30t's 1.016x), the README row.
    gpu_info
    synth qwen3-32b q4_k_m
    tg_on 0 5 140 --arm configs/arm-base.toml --arm configs/arm-mmvs-glu-pairs-off.toml
    rm -f "$f"
    ;;
  nd31|nd31b|nd31c|nd31d)
    # Run in the thirty-first session (receipts/h200/logs/nd31*-*.log): the deferred norm with the
    # scale in the matvecs, 1.033x qwen3-8b q4_k_m but 0.985x / 0.977x qwen3-32b, and the timelines
    # behind the per-wave model (bench/notes/norm-decode.md). nd32 and nd32b test what followed.
    echo "$phase: ran in the thirty-first session; see bench/notes/norm-decode.md" >&2
    exit 2
    ;;
  nd32)
    # Run in the thirty-second session (receipts/h200/logs/nd32-60cadf4-20261204.log.gz): the norm's
    # scale gates 252/252, qwen3-8b tg128 scale 1.050x against the partials' 1.057x at d0, 1.021x at
    # 4096 keys, q4_0 1.055x, q8_0 1.030x, a d0 timeline (bench/notes/norm-decode.md, "The norm's
    # scale"). nd32b was not run then (the device machine stopped answering).
    echo "$phase: ran in the thirty-second session; see bench/notes/norm-decode.md" >&2
    exit 2
    ;;
  sk33)
    # Ran in the thirty-fifth session (receipts/h200/logs/sk33-e6aa55c-20261205.log.gz): gates green,
    # qwen3-32b q4_k_m tg128 1.080x with 5184 (the default since).
    echo "$phase: ran in the thirty-fifth session; see bench/notes/mmvs.md" >&2
    exit 2
    ;;
  nd32b)
    # Ran in the thirty-fifth session (receipts/h200/logs/nd32b-e6aa55c-20261205.log.gz): the norm's scale
    # 0.990x on qwen3-32b q4_k_m tg128 (dropped there), and a d0 timeline of the base.
    echo "$phase: ran in the thirty-fifth session; see bench/notes/norm-decode.md" >&2
    exit 2
    ;;
  sk33b)
    # After sk33 (thirty-fifth session: 5184 won 1.080x on qwen3-32b and is the default since; the norm's
    # scale lost there, 0.990x in nd32b): qwen3-32b q4_k_m tg128 with the GLU row pairs kept off the
    # 5120-weight rows (at one warp per row the GLU holds a lane's two tasks of each matrix in one
    # round) against the default, and the old split rule as the second arm.
    gpu_info
    synth qwen3-32b q4_k_m
    tg_on 0 5 200 --arm configs/arm-base.toml --arm configs/arm-mmvs-split-min-k-5184-no-glu-pairs.toml \
      --arm configs/arm-mmvs-split-min-k-4160.toml
    rm -f "$f"
    ;;
  nd33)
    # After nd32b (run it first): qwen3-8b q4_k_m d0 with the two deferred forms in the reverse of
    # nd32's order (the scale second, the partials third: nd32 had them 1.050x / 1.057x), a q8_0 d0
    # timeline with the scale form (the q8_0 row, 0.70 of the roofline with it, is the closest to its
    # 0.75 target: what is left of its step), and ncu of the 32B's Q4_K GLU pairs (that model's largest
    # gap: 44.6 us exposed per call for 30.7 us of bytes) beside the 8B's GLU and Q4_K down, in one
    # tar (ncu.tar.gz).
    gpu_info
    synth qwen3-8b q4_k_m
    tg_on 0 5 160 --arm configs/arm-base.toml --arm configs/arm-norm-defer-scale.toml --arm configs/arm-norm-defer.toml
    rm -f "$f"
    synth qwen3-8b q8_0
    traces_at 0 -- ns-q8 --config configs/arm-norm-defer-scale.toml
    rm -f "$f"
    export LD_LIBRARY_PATH=$PWD/.device/lib
    ncu_cases mmvs_ail_kernel "^  void|Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issued Ipc|Warp Cycles Per Issued|No Eligible|L2 Hit Rate|L1/TEX Hit|Executed Instructions  |Waves Per SM" \
      "gp5-q4k-25600x5120|mmvs_gp_cap5/Q4_K/25600x5120/m1" "glu5-q4k-12288x4096|mmvs_ail_glu_cap5/Q4_K/12288x4096/m1" \
      "rp1-q4k-4096x12288|mmvs_rp1_cap6/Q4_K/4096x12288/m1"
    tar czf "$out/ncu.tar.gz" -C "$out" ncu && rm -rf "$out/ncu"
    ;;
  q5k34)
    # mmvs for Q5_K and IQ4_XS (built in the thirty-third session; off by default: kernels.mmvs_types
    # without q5_k / iq4_xs). Gates: kernel-check mmvs_id and mmvs rows of both types (bytes against the
    # other launch forms and orders, f64), CUDA-vs-CPU incl. CudaModels.MmvsQ5kIq4xsAgainstOracle
    # (q5_k_m / iq4_xs models 256 and 5120 wide against the oracle with and without the key, decode ==
    # verify); kernel times beside Q4_K's at the qwen3-8b shapes and beside mmvq's rows of the same
    # types (llama 14336 shapes). The tg128 rows are q5k34t (one call's 600 s do not hold both).
    gpu_info
    for sec in mmvs_id mmvs; do
      for ty in Q5_K IQ4_XS; do
        timeout 150 "$bin/kernel-check" --section $sec --filter $ty --seed 20263410 --receipt "$out/kernel-check.jsonl" |
          grep -E "FAIL|ERR|kernel-check:" | tail -n 6
      done
    done
    cuda_vs_cpu "Q5kIq4xs|q5_k_m|iq4_xs" 10
    for flt in mmvs_ail_cap6/Q4_K/4096x mmvs_ail_glu_cap5/Q4_K/12288; do
      timeout 60 "$bin/kernel-check" --section mmvs --perf --seed 20263411 --filter "$flt" --receipt "$out/kernel-check-perf.jsonl" |
        grep -E "^\[|kernel-check:" | sed 's/norm_err.*|/|/'
    done
    for ty in Q5_K IQ4_XS; do
      for flt in mmvs_ail_cap6/$ty/4096x mmvs_ail_glu_cap5/$ty/12288 mmvs_ail_cap6/$ty/151936x4096 mmvs/$ty/14336x4096/m1 mmvs/$ty/4096x14336/m1; do
        timeout 60 "$bin/kernel-check" --section mmvs --perf --seed 20263411 --filter "$flt" --receipt "$out/kernel-check-perf.jsonl" |
          grep -E "^\[|kernel-check:" | sed 's/norm_err.*|/|/'
      done
      timeout 60 "$bin/kernel-check" --section matvec --perf --seed 20263412 --filter "$ty/" --receipt "$out/kernel-check-perf.jsonl" |
        grep -E "^\[|kernel-check:" | sed 's/norm_err.*|/|/'
    done
    ;;
  q5k34t)
    # After q5k34 (its gates green): qwen3-8b q5_k_m and iq4_xs tg128 at d0, both types on mmvs as the arm.
    gpu_info
    for mix in q5_k_m iq4_xs; do
      synth qwen3-8b "$mix"
      tg_on 0 5 90 --arm configs/arm-base.toml --arm configs/arm-mmvs-q5k-iq4xs.toml --arm configs/arm-mmvs-q5k-iq4xs-g1t.toml
      rm -f "$f"
    done
    ;;
  g1t34)
    # kernels.mmvs_glu_one_task (built in the thirty-third session): the one-token GLU with one task per
    # matrix in flight, capped like the GLU (Q8_0 79 registers at 6 CTAs per SM, where its two-task
    # GLU runs uncapped; Q4_K 75 at 6 instead of 96 at 5). Gates (mmvs_id mmvs_glu1t/*: bytes against
    # the two-task launch, every type, SiLU / GELU, caps 0 / 5 / 6), kernel times beside the default
    # GLU's, then tg128 arms on qwen3-8b q8_0 (the row closest to its target) and q4_k_m.
    gpu_info
    timeout 150 "$bin/kernel-check" --section mmvs_id --filter mmvs_glu1t --seed 20263430 --receipt "$out/kernel-check.jsonl" |
      grep -E "FAIL|ERR|kernel-check:" | tail -n 6
    cuda_vs_cpu "GluOneTask" 6
    for flt in mmvs_glu1t_cap mmvs_ail_glu/ mmvs_ail_glu_cap5/; do
      timeout 90 "$bin/kernel-check" --section mmvs --perf --seed 20263431 --filter "$flt" --receipt "$out/kernel-check-perf.jsonl" |
        grep -E "^\[|kernel-check:" | grep -E "Q8_0|Q4_K|Q5_K|IQ4_XS|kernel-check:" | sed 's/norm_err.*|/|/'
    done
    tg_mixes configs/arm-mmvs-glu-one-task-q8.toml q8_0
    tg_mixes configs/arm-mmvs-glu-one-task-q4k.toml q4_k_m
    ;;
  s36c)
    # mmvf34's tg128 rows (s36b ran its gates and kernel times, then ran out of time).
    gpu_info
    # (s36b's whole-section gate ran past its 150 s: the F16 cases only, the ones the f16 rows use)
    # (every case's line, to see where a slow or stuck one is)
    timeout 120 "$bin/kernel-check" --section mmvf --filter "/F16/" --seed 20263600 --receipt "$out/kernel-check.jsonl" |
      grep -E "^\[|kernel-check:" | cut -c1-110
    # the thirty-seventh session's P x V rescale through selp (same bits): the tensor-core P x V
    # against its naive twin's tolerance (several tiles per warp at 4097 / 16384 keys), and the
    # folded default instances byte-identical to the unfolded path
    timeout 90 "$bin/kernel-check" --section attn --filter pv16 --seed 20263701 --receipt "$out/kernel-check.jsonl" |
      grep -E "FAIL|ERR|kernel-check:" | tail -n 6
    timeout 120 "$bin/kernel-check" --section fused --filter attn_decode_rope/ --seed 20263702 --receipt "$out/kernel-check.jsonl" |
      grep -E "FAIL|ERR|kernel-check:" | tail -n 6
    # and the K/V pair append's sides selected by value (no local copy of its parameters)
    timeout 60 "$bin/kernel-check" --section fused --filter kv_append_pair --seed 20263703 --receipt "$out/kernel-check.jsonl" |
      grep -E "FAIL|ERR|kernel-check:" | tail -n 4
    synth qwen3-8b f16
    tg_on 0 5 200 --arm configs/arm-base.toml --arm configs/arm-mmvf-v2.toml --arm configs/arm-mmvf-v2-r1.toml --arm configs/arm-mmvf-v2-r4.toml
    rm -f "$f"
    ;;
  s37a)
    # The next session's first call (s36e and rows37 in one, no rebuild between): the whole
    # CUDA-vs-CPU suite with its base configuration at kernels.norm_defer (up to 4096 columns) and
    # kernels.mmvs_row_pairs_qkv on, the q/k/v row-pair gates (the refusal check fixed), then the
    # README decode rows measured with both keys as the base configuration (pp-bench --config; the
    # receipts record it) and the reversed arms in the same call (A/A copy): qwen3-8b q4_k_m tg128 at
    # 0 / 4096 / 16384 keys, q4_0 and q8_0 tg128, qwen3-32b q4_k_m tg128 (its 5120-column norms stay
    # full by the width bound; the q/k/v pairs reversed). Suite and gates green: flip both defaults
    # and take the README rows from these receipts. ~9 minutes.
    gpu_info
    suite_args=(--config configs/arm-norm-defer.toml --config configs/arm-mmvs-row-pairs-qkv.toml)
    suite_tag="-arms"
    cuda_vs_cpu "base configuration" 20
    suite_args=()
    suite_tag=""
    for flt in mmvs_rp_x3 mmvs_pair_rp; do
      timeout 60 "$bin/kernel-check" --section mmvs_id --filter $flt --seed 20263700 --receipt "$out/kernel-check.jsonl" |
        grep -E "FAIL|ERR|kernel-check:" | tail -n 6
    done
    both=(--config configs/arm-norm-defer.toml --config configs/arm-mmvs-row-pairs-qkv.toml)
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 5 240 "${both[@]}" --arm configs/arm-base.toml --arm configs/arm-norm-defer-off.toml \
      --arm configs/arm-mmvs-row-pairs-qkv-off.toml
    rm -f "$f"
    for mix in q4_0 q8_0; do
      synth qwen3-8b $mix
      tg_on 0 5 90 "${both[@]}" --arm configs/arm-base.toml --arm configs/arm-norm-defer-off.toml
      rm -f "$f"
    done
    synth qwen3-32b q4_k_m
    tg_on 0 5 120 "${both[@]}" --arm configs/arm-base.toml --arm configs/arm-mmvs-row-pairs-qkv-off.toml
    ;;
  fold37)
    # The RoPE fold on the q8_0 and q4_0 rows (after s37a, at the defaults it flips): measured
    # 0.980x on qwen3-8b q8_0 when it became the default (c6cb30a, 2026-12-02; 1.028x on q4_k_m)
    # and not re-measured since; q8_0 is the row closest to its target (445). A fold-off arm beside
    # the base and its A/A copy; a win past the A/A spread makes a per-type rule worth building.
    # ~3 minutes.
    gpu_info
    for mix in q8_0 q4_0; do
      synth qwen3-8b $mix
      tg_on 0 5 100 --arm configs/arm-base.toml --arm configs/arm-attn-rope-fold-off.toml
      rm -f "$f"
    done
    ;;
  moe37)
    # kernels.moe_routed_v2 and kernels.moe_glu_q8_1 (built in the thirty-sixth session): the gates
    # (kernel-check moe routed_matvec_v2/*: every slot byte-identical to a plain v1 launch on its
    # expert, f64, a bad id; GPU test Qwen3MoeRoutedV2SameBytes: decode and verify logits the plain
    # routed form's bytes with either key and both), kernel times at qwen3-30b-a3b's expert shapes
    # beside the plain routed form, then qwen3-30b-a3b q8_0 tg128 with each key and both as arms (one
    # arm resident at a time, as moe35); then kernels.moe_device_route_prefill: the grouping and
    # grouped-matvec gates (kernel-check moe group/*, grouped_matvec/*), the GPU test
    # Qwen3Moe_Q4_K_M_DevicePrefill (in the Qwen3Moe* filter) and pp512 host-routed against it
    # (llama.cpp 11317), and the same with kernels.moe_grouped_mma (gates grouped_mma/*, GPU test
    # Qwen3Moe_Q8_0_DevicePrefillMma). ~9 minutes.
    gpu_info
    for flt in routed_matvec_v2 group/ grouped_matvec/ grouped_mma/; do
      timeout 150 "$bin/kernel-check" --section moe --filter $flt --seed 20263700 --receipt "$out/kernel-check.jsonl" |
        grep -E "FAIL|ERR|kernel-check:" | tail -n 6
    done
    for flt in e128-n1 e128-n512; do
      timeout 100 "$bin/kernel-check" --section moe --perf --seed 20263701 --filter $flt --receipt "$out/kernel-check-perf.jsonl" |
        grep -E "^\[|kernel-check:" | sed 's/norm_err.*|/|/'
    done
    timeout 100 "$bin/test_backend_cuda_gpu" --shared "$sh" --gtest_filter='CudaModels.Qwen3Moe*' > "$out/test_backend_cuda_gpu.log" 2>&1
    echo "test_backend_cuda_gpu rc=$?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/test_backend_cuda_gpu.log"
    synth qwen3-30b-a3b q8_0 400
    tg_on 0 5 300 --arm configs/arm-base.toml --arm configs/arm-moe-glu-q8-1.toml --arm configs/arm-moe-routed-v2.toml \
      --arm configs/arm-moe-routed-v2-glu-q8-1.toml --set bench.interleave=false
    # the prefill: host-routed against the grouped device form (kernels.moe_device_route_prefill)
    moe_prefill_arms
    rm -f "$f"
    ;;
  moe37b)
    # After moe37: qwen3-30b-a3b q4_k_m (llama.cpp on the H200: tg128 299.3, pp512 9522 tok/s; its
    # experts Q4_K gate/up and Q6_K / Q8_0 down per the mix): tg128 at the defaults with the v2 and
    # GLU-q8_1 arms, pp512 host-routed against the grouped device form, dp4a and int8 tensor cores.
    # ~6 minutes.
    gpu_info
    synth qwen3-30b-a3b q4_k_m 300
    tg_on 0 5 240 --arm configs/arm-base.toml --arm configs/arm-moe-routed-v2-glu-q8-1.toml --set bench.interleave=false
    moe_prefill_arms
    rm -f "$f"
    ;;
  arch35)
    # The architectures added in the thirty-fourth session on the GPU: the Gated DeltaNet kernels
    # (kernel-check section ssm: f64 reference from a random state, conv state bytes, two launches
    # vs one) and the sigmoid activation / GLU (section act), then CUDA-vs-CPU for the whole
    # qwen35 q4_k_m, qwen3moe q4_k_m (the host-routed MoE, kernel-check section moe),
    # gemma3 and gemma4 synth files (CudaModels.Qwen35_* / Qwen3Moe_* / Gemma3_F32 / Gemma4_F32).
    # About a minute.
    gpu_info
    timeout 120 "$bin/kernel-check" --section ssm --seed 20263500 --receipt "$out/kernel-check.jsonl" |
      grep -E "FAIL|ERR|kernel-check:" | tail -n 8
    timeout 60 "$bin/kernel-check" --section act --filter sigmoid --seed 20263501 --receipt "$out/kernel-check.jsonl" |
      grep -E "FAIL|ERR|kernel-check:" | tail -n 4
    timeout 200 "$bin/kernel-check" --section moe --seed 20263503 --receipt "$out/kernel-check.jsonl" |
      grep -E "FAIL|ERR|kernel-check:" | tail -n 4
    timeout 60 "$bin/kernel-check" --section attn_naive --seed 20263504 --receipt "$out/kernel-check.jsonl" |
      grep -E "FAIL|ERR|kernel-check:" | tail -n 4
    timeout 60 "$bin/kernel-check" --section act --filter swiglu_oai --seed 20263505 --receipt "$out/kernel-check.jsonl" |
      grep -E "FAIL|ERR|kernel-check:" | tail -n 4
    timeout 60 "$bin/kernel-check" --section ssm --perf --filter "k16x128-v32x128" --seed 20263502 \
      --receipt "$out/kernel-check-perf.jsonl" | grep -E "^\[|kernel-check:" | sed 's/norm_err.*|/|/'
    cuda_vs_cpu "Qwen35|Qwen3Moe|Gemma" 14
    ;;
  moe35)
    # The first MoE rows on the anchor's MoE shape: qwen3-30b-a3b q8_0 (llama.cpp on the H200: tg128
    # 283.2, pp512 11317 tok/s). tg128 with the host-routed MoE (a host round trip and ~50 launches
    # per MoE layer, eager) against kernels.moe_device_route (router kernel, routed matvecs, the step
    # a CUDA graph) as the arm, then pp512 (host-routed: batches over 8 tokens) and the routed
    # matvec's kernel times at that model's expert shapes. gguf-synth writes ~32 GB (a few minutes).
    gpu_info
    timeout 100 "$bin/kernel-check" --section moe --perf --seed 20263520 --filter "e128-n1" --receipt "$out/kernel-check-perf.jsonl" |
      grep -E "^\[|kernel-check:" | sed 's/norm_err.*|/|/'
    synth qwen3-30b-a3b q8_0 400
    # one arm resident at a time (three copies of a 32 GB file and their split mirrors may not fit)
    tg_on 0 5 240 --arm configs/arm-base.toml --arm configs/arm-moe-device-route.toml --set bench.interleave=false
    timeout 150 "$bin/pp-bench" -m "$f" -p 512 -n 0 -d 0 -r 3 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f"
    ;;
  defer30)
    # The deferred decode norm, kernel level (built in the thirtieth session, not yet in the backend):
    # the norm_defer / mmvs_norm_ss gates, and the kernel times of the deferred norm beside the split
    # norm it would replace (qwen3-8b / qwen3-32b widths).
    gpu_info
    timeout 120 "$bin/kernel-check" --section mmvs_id --filter norm_defer --seed 20263040 --receipt "$out/kernel-check.jsonl" | grep -E "FAIL|ERR|kernel-check:" | tail -n 12
    timeout 120 "$bin/kernel-check" --section mmvs_id --filter mmvs_norm_ss --seed 20263041 --receipt "$out/kernel-check.jsonl" | grep -E "FAIL|ERR|kernel-check:" | tail -n 12
    for c in 4096 5120; do
      timeout 30 "$bin/kernel-check" --section mmvs_id --perf --seed 20263042 --filter "/$c/split8" --receipt "$out/kernel-check-perf.jsonl" | sed 's/norm_err.*|/|/' | tail -n 2
      timeout 30 "$bin/kernel-check" --section mmvs_id --perf --seed 20263042 --filter "rms_norm_q8s_il_bulk_split8/1x$c" --receipt "$out/kernel-check-perf.jsonl" | sed 's/norm_err.*|/|/' | tail -n 2
    done
    ;;
  gp30q)
    # Run in the thirtieth session (receipts/h200/logs/gp30q-9709746-20261204.log.gz; the Q4_0 GLU pairs
    # 1.026x qwen3-32b q4_0, A/A 1.012x: on by default since 45bc317; nd31b has the reversal). Its arm
    # file is removed.
    echo "gp30q: ran in the thirtieth session; see bench/notes/mmvs-row-pairs.md" >&2
    exit 2
    ;;
  trace30)
    # The thirtieth session's last call: decode timelines of the defaults (713bcdb) on qwen3-8b q4_k_m
    # at 4096 and 16384 keys (the d0 one is final30a's), for the next plan's exposed-time table
    # (scripts/trace-exposed.py; bench/notes/decode-persistent-plan.md).
    gpu_info
    synth qwen3-8b q4_k_m
    traces_at 4096 16384
    rm -f "$f"
    ;;
  gp30|gp30t|gp30u)
    # Run in the thirtieth session: gp30 (receipts/h200/logs/gp30-5e2b9b1-20261204.log.gz; the SiLU GLU
    # pairs' gates 60/60, kernel times beside the GLU's) and gp30t (gp30t-5e2b9b1-20261204.log.gz; tg128
    # GLU pairs 0.999x / 0.990x qwen3-8b q4_k_m, 1.016x qwen3-32b; the row-pair head at 6 1.007x /
    # 1.007x). gp30u (q8_0 / q4_0 GLU pairs on 4096-weight rows, timelines) was dropped: the pairs are
    # limited to 5120-weight rows and final30a traces them. Their arm files are removed.
    echo "$phase: ran or dropped in the thirtieth session; see bench/notes/mmvs-row-pairs.md" >&2
    exit 2
    ;;
  final29)
    # Run in the twenty-ninth session (receipts/h200/logs/final29-4ab6318-20261204.log.gz; min_k 0 as the
    # arm 0.995x / 0.995x / 0.992x q4_k_m, 0.986x qwen3-32b; the README rows). The twenty-ninth session's last tg call: the defaults (the Q6_K one-task pairs, the other pairs one
    # task from 8192-weight rows), kernels.mmvs_row_pairs_one_task_min_k = 0 as the arm (the reversed
    # A/B, an A/A copy); the mmvs_rp gates, CUDA-vs-CPU, the README tg128 rows of qwen3-8b q4_k_m at 0 /
    # 4096 / 16384 keys and qwen3-32b q4_k_m.
    gpu_info
    timeout 60 "$bin/kernel-check" --section mmvs_id --filter mmvs_rp --seed 20262990 --receipt "$out/kernel-check.jsonl" | grep -E "FAIL|ERR|kernel-check:" | tail -n 8
    cuda_vs_cpu "RowPairs" 6
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 5 200 --arm configs/arm-base.toml --arm configs/arm-mmvs-rp-one-min-k-0.toml
    rm -f "$f"
    synth qwen3-32b q4_k_m
    tg_on 0 5 140 --arm configs/arm-base.toml --arm configs/arm-mmvs-rp-one-min-k-0.toml
    rm -f "$f"
    ;;
  rpk30b)
    # Run in the twenty-ninth session (receipts/h200/logs/rpk30b-a461c25-20261204.log.gz; its
    # CudaModels.MmvsRowPairsSameBytes / MmvsCapSameBytesAndSpillRule failed on a refusal since removed:
    # a one-task type that is not paired): the Q6_K one-task pairs reversed (off as the arm) 0.983x /
    # 0.987x qwen3-8b q4_k_m at 0 / 4096 keys; kernels.mmvs_row_pairs_one_task_min_k = 8192 1.001x /
    # 1.003x there, 1.021x q8_0; 16384 1.013x qwen3-32b (A/A 0.999x-1.000x). Its arm files are removed.
    echo "rpk30b: its arms are removed (min_k 8192 is the default); see its log" >&2
    exit 2
    ;;
  rpk30)
    # Kernel times of the three plain-launch forms (plain, two-task pairs, one-task pairs) for Q4_K
    # and Q6_K at the qwen3-8b and qwen3-32b shapes: rpone29 measured the Q4_K one-task pairs 0.962x
    # qwen3-8b q4_k_m and 1.015x qwen3-32b (bench/notes/mmvs-row-pairs.md).
    gpu_info
    for t in Q4_K Q6_K; do
      for shp in 4096x4096 4096x12288 5120x8192 5120x25600 151936x5120; do
        timeout 30 "$bin/kernel-check" --section mmvs --perf --seed 20263001 \
          --filter "/$t/$shp/m1" --receipt "$out/kernel-check-perf.jsonl" | grep -E "ail_cap6|rp_cap0|rp1_cap" | sed 's/norm_err.*|/|/'
      done
    done
    ;;
  rpone29k)
    # Not run: rpone29 and rpk30 measured the same kernel times (and more shapes).
    echo "rpone29k: superseded by rpk30 (kernel times of the three forms); see its log" >&2
    exit 2
    ;;
  rpone29)
    # Run in the twenty-ninth session (receipts/h200/logs/rpone29-f258086-20261204.log.gz): mmvs_rp gates
    # 184/184, CUDA-vs-CPU 36/36; tg128 qwen3-8b q4_k_m Q6_K one-task pairs 1.022x / 1.014x (0 / 4096
    # keys; capped at 6 1.012x / 1.006x), Q4_K one-task 0.962x / 0.948x, qwen3-32b Q4_K one-task
    # 1.015x, q4_0 one-task pairs 0.989x (A/A 0.995x-1.003x). Its arm files are removed.
    echo "rpone29: its arms are removed (the Q6_K one-task pairs are the default); see its log" >&2
    exit 2
    ;;
  final28)
    # Run in the twenty-eighth session (receipts/h200/logs/final28-7f1c8b8-20261204.log.gz; off / on
    # 0.987x / 0.978x / 0.984x q4_k_m, 0.985x q8_0, 1.006x qwen3-32b). The twenty-eighth session's last call: the defaults with kernels.mmvs_row_pairs = ["q4_k",
    # "q8_0"], the off form as the arm (the reversed A/B, an A/A copy): every mmvs_id gate,
    # CUDA-vs-CPU, the README tg128 rows of qwen3-8b q4_k_m at 0 / 4096 / 16384 keys, q8_0, and
    # qwen3-32b q4_k_m (last: the longest file to make). Prefill is not touched by the lever (one-token
    # launches only): its rows stay final27's.
    gpu_info
    timeout 90 "$bin/kernel-check" --section mmvs_id --seed 20261990 --receipt "$out/kernel-check.jsonl" | grep -E "FAIL|ERR|kernel-check:" | tail -n 8
    cuda_vs_cpu "RowPairs" 6
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 5 200 --arm configs/arm-base.toml --arm configs/arm-mmvs-row-pairs-off.toml
    rm -f "$f"
    synth qwen3-8b q8_0
    tg_on 0 5 60 --arm configs/arm-base.toml --arm configs/arm-mmvs-row-pairs-off.toml
    rm -f "$f"
    synth qwen3-32b q4_k_m
    tg_on 0 5 150 --arm configs/arm-base.toml --arm configs/arm-mmvs-row-pairs-off.toml
    rm -f "$f"
    ;;
  rp28b)
    # Run in the twenty-eighth session (receipts/h200/logs/rp28b-36bb109-20261204.log.gz): the mmvs_rp
    # gates (120/120), CUDA-vs-CPU 36/36, tg128 with Q4_K / Q8_0 / Q4_0 row pairs uncapped and at 5
    # as arms: q4_k_m 1.023x / 1.026x uncapped (0 / 4096 keys), 0.969x / 0.963x at 5; q8_0 1.021x;
    # q4_0 0.993x either way (A/A 0.995x-1.001x). The default became ["q4_k", "q8_0"] uncapped; the
    # arm files are removed (configs/arm-mmvs-row-pairs-off.toml is final28's).
    echo "rp28b: its arms are removed (the lever is the default); see its log" >&2
    exit 2
    ;;
  rp28)
    # Run in the twenty-eighth session (receipts/h200/logs/rp28-b6879fa-20261204.log.gz): every mmvs_id
    # gate incl. mmvs_rp (462/462), CUDA-vs-CPU 36/36, tg128 with kernels.mmvs_row_pairs on for every
    # weight type (the key was a boolean then; its arm file now names types): 0.965x q4_k_m at 0 and
    # 4096 keys, 1.023x q8_0, 0.981x q4_0 (A/A 0.997x-1.003x), kernel times of both forms.
    echo "rp28: its arm is rp28b's now (kernels.mmvs_row_pairs names types); see its log" >&2
    exit 2
    ;;
  chains28)
    # Run in the twenty-eighth session (receipts/h200/logs/chains28-62aa63a-20261204.log.gz): the Q4_K /
    # Q8_0 / Q4_0 tasks' 8-deep dp4a chains as two of 4 (kernels.mmvs_split_chains) as the arm:
    # neutral (tg128 0.994x / 0.996x / 1.004x, A/A 0.999x / 1.002x / 1.003x); the split form, its
    # key and its arm file are removed (bench/notes/mmvs-split-chains.md).
    echo "chains28: kernels.mmvs_split_chains is removed; see its log" >&2
    exit 2
    ;;
  rp27)
    # Run in the twenty-seventh session (receipts/h200/logs/rp27-25eb5e9-20261204.log.gz): a row's
    # plane pointers once per row (kernels.mmvs_row_planes) against the per-task addressing as the
    # arm: neutral (tg128 0.999x, A/A 1.001x; kernel level -1.9% to +3%); the row-planes form, its
    # key and its arm file are removed (bench/notes/mmvs-row-planes.md).
    echo "rp27: kernels.mmvs_row_planes is removed; see its log" >&2
    exit 2
    ;;
  sum27)
    # Run in the twenty-seventh session (receipts/h200/logs/sum27-b9036f2-20261204.log.gz): the Q4_0
    # offset from the activation's quant sum (one conversion per block) against the dp4a form as
    # the arm (kernels.mmvs_q4_0_offset_dp4a): the dp4a form was 1.047x faster (A/A 0.998x); the
    # quant-sum form, its key and its arm file are removed (bench/notes/mmvs-offset-dp4a.md).
    echo "sum27: kernels.mmvs_q4_0_offset_dp4a is removed; see its log" >&2
    exit 2
    ;;
  final27)
    # The twenty-seventh session's last call: the defaults after kernels.mmvs_offset_bytes' removal
    # (the one-dp4a offset form only): kernel-check mmvs_id, CUDA-vs-CPU, and the README rows:
    # qwen3-8b q4_k_m tg128 at 0 / 4096 / 16384 keys + pp512 / pp2048, q4_0 and q8_0 pp512 +
    # tg128, qwen3-32b q4_k_m pp512 + tg128 (last: the longest file to make).
    gpu_info
    timeout 90 "$bin/kernel-check" --section mmvs_id --seed 20261930 --receipt "$out/kernel-check.jsonl" | tail -n 2
    cuda_vs_cpu "" 4
    q4km_rows 150
    rows_q4_0_q8_0
    row_32b 150
    rm -f "$f"
    ;;
  ob27)
    # Run in the twenty-seventh session (receipts/h200/logs/ob27-b13ad40-20261204.log.gz): the mmvs /
    # mmvs_id gates with kernels.mmvs_offset_bytes (the Q6_K / Q4_0 offsets subtracted byte-wise,
    # the old form) beside the default, kernel times of both, CUDA-vs-CPU, tg128 of q4_k_m and q4_0
    # with the old form as the arm (0.991x / 0.993x / 0.957x). The old form, its key and its arm
    # file are removed (bench/notes/mmvs-offset-dp4a.md).
    echo "ob27: kernels.mmvs_offset_bytes is removed; see its log" >&2
    exit 2
    ;;
  split27)
    # Run in the twenty-seventh session (receipts/h200/logs/split27-a542fd8-20261204.log.gz): every
    # decode attention gate (the sk / bps cases), kernel times at 16384 / 4096 keys, CUDA-vs-CPU and
    # tg128 on an f16 cache with kernels.attn_f16_split_keys = 64, kernels.attn_blocks_per_sm = 8 and
    # both as arms (0.938x-1.000x, defaults kept; the arm files are removed).
    echo "split27: its arms are removed; see its log" >&2
    exit 2
    ;;
  kvring27)
    # Run in the twenty-seventh session (receipts/h200/logs/kvring27-30ee70a-20261204.log.gz): the gates
    # and tg128 of kernels.attn_f16_kv_ring (two K + V tile pairs per warp, 3 blocks per SM; arms
    # configs/arm-attn-f16-kv-ring.toml and configs/arm-attn-max-splits-49.toml, both 0.976x at
    # 16384 keys, removed with the key), then ncu_src attn of the ring and the single slot at 49 splits
    # and of the combine with its preload at 66.
    echo "kvring27: its arms (kernels.attn_f16_kv_ring, attn_max_splits 49) are removed; see its log" >&2
    exit 2
    ;;
  ring26 | f16mma26)
    # Run in the twenty-sixth session through this helper's steps (receipts/h200/logs/{ring26,
    # f16mma26}-*-20261203.log): f16mma26 with configs/arm-attn-f16-mma-off.toml as the second arm,
    # ring26 with configs/arm-attn-f16-k-ring.toml (removed with kernels.attn_f16_k_ring in the
    # twenty-seventh session); tiles26's arm (kernels.attn_q8_mma) is removed.
    [ "$phase" = ring26 ] && { echo "ring26: its arm is removed" >&2; exit 2; }
    arm=configs/arm-attn-f16-mma-off.toml
    attn_tiles_call 20261908 260 --set kv.type_k=f16 --set kv.type_v=f16 --arm configs/arm-base.toml --arm "$arm"
    ;;
  first26)
    # The next session's first call (written at the end of the twenty-fifth, not run yet): gates at
    # the defaults (kernel-check fused, the CUDA-vs-CPU tests), then where an f16 KV cache's decode
    # step goes (llama.cpp's cache type: 0.82x / 0.79x / 0.65x of our q8_0 / q5_1 default at 0 /
    # 4096 / 16384 keys, nk25): timelines at 0 and 16384 keys with kv.type_k = kv.type_v = f16,
    # for the f16-cache attention build (bench/notes/attn-new-key.md).
    gpu_info
    kc 200 fused attn_decode_rope 20261901 6
    cuda_vs_cpu "" 4
    synth qwen3-8b q4_k_m
    traces_at 0 16384 -- f16kv --set kv.type_k=f16 --set kv.type_v=f16
    rm -f "$f"
    ;;
  rev25)
    # Levers kept on ratios inside the first arm's handicap (aa25: a later arm runs ~0.3-0.7%
    # faster than the first with the same configuration), re-measured with the lever in the first
    # arm (the defaults) and its off form as a later arm, beside an A/A copy of the base:
    # norm/quantize bulk loads (kept on 1.010x / 1.004x), the Q4_K GLU's cap fallback (1.005x on
    # qwen3-8b), no combine launch at depth 0 (1.020x). qwen3-8b q4_k_m tg128 at depth 0.
    gpu_info
    synth qwen3-8b q4_k_m
    tg_on 0 7 200 --arm configs/arm-base.toml --arm configs/arm-base-b.toml --arm configs/arm-small-bulk-off.toml \
      --arm configs/arm-mmvs-cap-fallback-off.toml --arm configs/arm-attn-no-combine-off.toml
    rm -f "$f"
    ;;
  aa25)
    # A/A: three identical arms (the base configuration) on qwen3-8b q4_k_m tg128 at 0 / 4096 /
    # 16384 keys: what an arm's position in the interleaved rotation does by itself (nk25 and wp25
    # both had their second arm ~1% faster at depth 0, whichever configuration it held).
    gpu_info
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 5 300 --arm configs/arm-base.toml --arm configs/arm-base-b.toml --arm configs/arm-base-c.toml
    rm -f "$f"
    ;;
  first25)
    # The next session's first call (written at 50887af, not run yet): the gates of the default
    # flipped without a device run (kernels.attn_softmax_interleave): kernel-check fused (every
    # attn_decode_rope case, 41 of them with the interleaved trees), the CUDA-vs-CPU tests at the
    # defaults, then the qwen3-8b q4_k_m README decode rows at the defaults with the old order as an
    # arm (0 / 4096 / 16384 keys) and pp512 / pp2048.
    gpu_info
    kc 200 fused attn_decode_rope 20261701 6
    cuda_vs_cpu "" 4
    q4km_rows 220 --arm configs/arm-base.toml --arm configs/arm-attn-softmax-interleave-off.toml
    ;;
  si24)
    # kernels.attn_softmax_interleave (the heads' online-softmax shuffle trees side by side):
    # gates (kernel-check fused attn_decode_rope/*_si against the unfolded path's bytes,
    # CUDA-vs-CPU incl. AttnSoftmaxInterleaveSameBytes), then tg128 arms base / interleaved on
    # qwen3-8b q4_k_m at 0 / 4096 / 16384 keys.
    gpu_info
    kc 120 fused _si 20261603 6
    cuda_vs_cpu "SoftmaxInterleave" 6
    synth qwen3-8b q4_k_m
    # (ran at 4adc9aa with the key off by default and an arm turning it on; since then the
    # default is on and the arm turns it off)
    tg_on 0,4096,16384 5 220 --arm configs/arm-base.toml --arm configs/arm-attn-softmax-interleave-off.toml
    rm -f "$f"
    ;;
  si24b)
    # Confirmation of si24 on a second call (the same binary): base / interleaved at 8192 and
    # 16384 keys (the group block, G = 4).
    gpu_info
    synth qwen3-8b q4_k_m
    tg_on 8192,16384 5 150 --arm configs/arm-base.toml --arm configs/arm-attn-softmax-interleave-off.toml
    rm -f "$f"
    ;;
  attnsrc24)
    # Where the depth attention's instructions and stalls are, per SASS line: ncu --set full with
    # the source counters of one launch of the folded kernel (fold + pv + prefetch + K stage) at
    # 16512 keys (G = 4, 66 splits) and of the pair form (G = 2) at 4096 keys; details and the
    # source page (SASS, executed instructions, stall samples) exported as text.
    gpu_info
    ncu --version | tail -n 1
    ncu_src fused "d16512|\\(int\\)4, \\(int\\)3, \\(bool\\)1, \\(bool\\)1, \\(bool\\)1, \\(bool\\)1, \\(bool\\)1, \\(bool\\)1>|neox_norm_pv16_pre_ks_ms96/q8_0-q5_1/32-8x128/n1@16512/" \
      "d4096hs2|\\(int\\)2, \\(int\\)3, \\(bool\\)1, \\(bool\\)1, \\(bool\\)1, \\(bool\\)1, \\(bool\\)1, \\(bool\\)1>|neox_norm_pv16_pre_ks_hs2_ms96/q8_0-q5_1/32-8x128/n1@4096/"
    ;;
  rows23b)
    # The README rows of the other files at the defaults (after skip23): qwen3-8b q4_0 / q8_0
    # pp512 + tg128, qwen3-32b q4_k_m pp512 + tg128.
    gpu_info
    rows_q4_0_q8_0
    row_32b 100
    rm -f "$f"
    ;;
  rows23)
    # The README rows at the twenty-third session's defaults (the bulk loads on, the GLU emit and
    # the sibling GLU removed): qwen3-8b q4_k_m tg128 at 0 / 4096 / 16384 keys and pp512 / pp2048;
    # q4_0 / q8_0 pp512 + tg128; qwen3-32b q4_k_m pp512 + tg128; qwen3-8b f16 pp512. No arms: the
    # gates first (CUDA-vs-CPU at the defaults).
    gpu_info
    cuda_vs_cpu "" 4
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 5 150
    traces_at 4096 16384  # timelines at depth (the combine's share since the preload)
    timeout 90 "$bin/pp-bench" -m "$f" -p 512,2048 -n 0 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f"
    rows_q4_0_q8_0
    row_32b 100
    rm -f "$f"
    row_f16 80
    ;;
  bulk23c)
    # Confirmation of bulk23 before the defaults change (a binary with both off by default): base vs
    # both bulk loads on qwen3-8b q4_k_m at 0 and 16384 keys; the CUDA-vs-CPU tests at the binary's
    # defaults first.
    gpu_info
    cuda_vs_cpu "SmallKernelBulk" 4
    synth qwen3-8b q4_k_m
    tg_on 0,16384 5 170 --arm configs/arm-small-bulk-off.toml --arm configs/arm-small-bulk.toml
    rm -f "$f"
    ;;
  pr22b)
    # The pair form's reach: the default 4608 keys (the interpolated crossover) vs 8192 and off at
    # 4096 / 5120 / 6144 keys, qwen3-8b q4_k_m; then qwen3-32b q4_k_m at 2048 with the pair form for
    # 8 per kv head.
    gpu_info
    synth qwen3-8b q4_k_m
    tg_on 4096,5120,6144 5 150 --arm configs/arm-base.toml --arm configs/arm-attn-head-pair-8192.toml \
      --arm configs/arm-attn-head-pair-off.toml
    rm -f "$f"
    tg qwen3-32b q4_k_m 2048 5 150 --arm configs/arm-base.toml --arm configs/arm-attn-head-pair-group8.toml
    ;;
  pr22)
    # kernels.attn_head_pair_keys 8192 + attn_head_pair_max_group 4 as defaults: gates (kernel-check
    # fused attn_decode_rope, CUDA-vs-CPU incl. AttnHeadSplitSameBytes runs 4 / 5), then the README
    # rows at the defaults with arms: qwen3-8b q4_k_m tg128 at 0 .. 16384 keys vs the pair form off
    # and to 16384, at 512 / 1024 vs the head split to 512 only; pp512 / pp2048 at the defaults;
    # q4_0 / q8_0 pp512 + tg128; qwen3-32b q4_k_m pp512 + tg128, at 2048 vs the pair form for 8.
    gpu_info
    kc 150 fused attn_decode_rope 20261402 5
    cuda_vs_cpu "AttnHeadSplit" 8
    synth qwen3-8b q4_k_m
    tg_on 0,2048,4096,6144,10240,16384 5 300 --arm configs/arm-base.toml --arm configs/arm-attn-head-pair-off.toml \
      --arm configs/arm-attn-head-pair-16384.toml
    tg_on 512,1024 5 60 --arm configs/arm-base.toml --arm configs/arm-attn-head-split-512.toml
    timeout 90 "$bin/pp-bench" -m "$f" -p 512,2048 -n 0 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f"
    rows_q4_0_q8_0
    row_32b 90
    tg_on 2048 5 90 --arm configs/arm-base.toml --arm configs/arm-attn-head-pair-group8.toml
    rm -f "$f"
    ;;
  hp21)
    # For the next session: kernels.attn_head_pair_keys (blocks of 2 query heads past
    # kernels.attn_head_split_keys). Gates: kernel-check fused attn_decode_rope (the _hs2 rows),
    # CUDA-vs-CPU incl. AttnHeadSplitSameBytes run 4 (three forms in one decode); --perf of the
    # folded launch at 4097 keys in the group / pair / single-head forms (G = 4 and 8); tg128 arms
    # base / pair to 8192 / pair to 32768 on qwen3-8b q4_k_m at 2048 / 4096 / 16384 keys and
    # qwen3-32b q4_k_m at 4096; then a d0 trace with the defaults (the attention after the head
    # split and the one-split direct form).
    gpu_info
    kc 150 fused attn_decode_rope 20261401 5
    cuda_vs_cpu "AttnHeadSplit|AttnFold" 8
    for flt in "_pre_ks/q8_0-q5_1/32-8x128/n1@4096/" "_ks_hs2_ms96/q8_0-q5_1/32-8x128/n1@4096/" \
               "_ks_hs_ms96/q8_0-q5_1/32-8x128/n1@4096/" "_ks_ms96/q8_0-q5_1/64-8x128/n1@4096/" \
               "_ks_hs2_ms96/q8_0-q5_1/64-8x128/n1@4096/"; do
      timeout 40 "$bin/kernel-check" --section fused --filter "$flt" --perf --seed 7 \
        --receipt "$out/kernel-check-perf.jsonl" | grep -E "attn_decode_rope" | sed 's/norm_err.*|/|/;s/bytes:.*|/|/'
    done
    synth qwen3-8b q4_k_m
    tg_on 2048,4096,16384 5 200 --arm configs/arm-base.toml --arm configs/arm-attn-head-pair-8192.toml \
      --arm configs/arm-attn-head-pair-32768.toml
    timeout 60 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0 -r 2 --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false --trace "$out/trace-d0.jsonl" \
      --receipt "$out/pp-bench-trace.jsonl" 2>&1 | grep -E "^trace|mmvs|attn|norm|quantize" | head -n 20
    gzip -f "$out"/trace-d0.jsonl
    rm -f "$f"
    tg qwen3-32b q4_k_m 4096 4 150 --arm configs/arm-base.toml --arm configs/arm-attn-head-pair-8192.toml
    ;;
  rows20)
    # The third call (6255617, before the defaults changed): the README decode rows with the arm of
    # the chosen defaults (head split to 1024 keys + one-split direct) against the old defaults.
    gpu_info
    arms="--arm configs/arm-base.toml --arm configs/arm-attn-head-split-1024-direct1.toml"
    tg qwen3-8b q4_k_m 0,4096,16384 5 200 $arms
    tg qwen3-8b q4_0 0 5 80 $arms
    tg qwen3-8b q8_0 0 5 80 $arms
    tg qwen3-32b q4_k_m 0 5 150 $arms
    ;;
  hs20b)
    # The second call: kernels.attn_one_split_direct (one-split rows written by the split kernel,
    # the combine's blocks wait and exit). Gates: kernel-check attn one_split_direct rows and fused
    # attn_decode_rope (incl. _direct1), CUDA-vs-CPU; --perf of the folded launch at 127 keys
    # with / without; tg128 arms on qwen3-8b q4_k_m d0 (base, split 256, split 256 + direct,
    # direct) and the split's threshold at 256 / 1024 / 2048 keys (split 8192 vs 256, which is off
    # there); qwen3-32b q4_k_m d0 (base, split 256, + direct) and d1024.
    gpu_info
    kc 120 attn,fused one_split_direct 20261302 3
    kc 120 fused attn_decode_rope 20261303 3
    cuda_vs_cpu "AttnHeadSplit|AttnFold" 8
    for flt in "_ks_hs_ms96/q8_0-q5_1/32-8x128/n1@127/" "_ks_hs_direct1_ms96/q8_0-q5_1/32-8x128/n1@127/" \
               "_ks_hs_direct1_ms96/q8_0-q5_1/64-8x128/n1@127/" "_ks_direct1_ms96/q8_0-q5_1/32-8x128/n1@59/"; do
      timeout 40 "$bin/kernel-check" --section fused --filter "$flt" --perf --seed 7 \
        --receipt "$out/kernel-check-perf.jsonl" | grep -E "attn_decode_rope" | sed 's/norm_err.*|/|/;s/bytes:.*|/|/'
    done
    hs256="--arm configs/arm-attn-head-split-256.toml" hs8192="--arm configs/arm-attn-head-split-8192.toml"
    synth qwen3-8b q4_k_m
    tg_on 0 6 100 --arm configs/arm-base.toml $hs256 --arm configs/arm-attn-head-split-256-direct1.toml \
      --arm configs/arm-attn-one-split-direct.toml
    tg_on 256,1024,2048 5 120 $hs256 $hs8192
    rm -f "$f"
    synth qwen3-32b q4_k_m
    tg_on 0 5 150 --arm configs/arm-base.toml $hs256 --arm configs/arm-attn-head-split-256-direct1.toml
    tg_on 1024 4 100 $hs256 $hs8192
    rm -f "$f"
    ;;
  hs20)
    # 2026-12-03 (twentieth session): kernels.attn_head_split_keys (one decode attention block per
    # query head for short rows). Gates: kernel-check fused attn_decode_rope (the _hs rows against
    # the unfolded group kernel's bytes), CUDA-vs-CPU incl. CudaModels.AttnHeadSplitSameBytes;
    # --perf of the folded launch with and without the split at 1 / 128 / 4097 keys; tg128 arms
    # base / split to 256 keys (d0) / split to 8192 keys (d4096) on qwen3-8b q4_k_m, base / 256
    # on qwen3-32b q4_k_m (8 query heads per kv head).
    gpu_info
    kc 120 fused attn_decode_rope 20261301 5
    cuda_vs_cpu "AttnHeadSplit|AttnFold" 8
    for flt in "_ks_ms96/q8_0-q5_1/32-8x128/n1@127/" "_ks_hs_ms96/q8_0-q5_1/32-8x128/n1@127/" \
               "_ks_hs_ms96/q8_0-q5_1/32-8x128/n1@0/" "_ks_hs_ms96/q8_0-q5_1/32-8x128/n1@4096/" \
               "_ks/q8_0-q5_1/32-8x128/n1@4096/" "_ks_ms96/q8_0-q5_1/64-8x128/n1@299/" "_ks_hs_ms96/q8_0-q5_1/64-8x128/n1@299/"; do
      timeout 40 "$bin/kernel-check" --section fused --filter "$flt" --perf --seed 7 \
        --receipt "$out/kernel-check-perf.jsonl" | grep -E "attn_decode_rope" | sed 's/norm_err.*|/|/'
    done
    tg qwen3-8b q4_k_m 0,4096 6 200 --arm configs/arm-base.toml --arm configs/arm-attn-head-split-256.toml \
      --arm configs/arm-attn-head-split-8192.toml
    tg qwen3-32b q4_k_m 0 5 150 --arm configs/arm-base.toml --arm configs/arm-attn-head-split-256.toml
    ;;
  fb19)
    # 2026-12-03 (nineteenth session): kernels.mmvs_cap_fallback (the interleaved Q4_K GLU at 5 CTAs
    # per SM where 6 spills). Gates: kernel-check mmvs_id (all: the cap-5 instances in
    # mmvs_inst / mmvs_ail, and the q8s producer cases moved to cases_q8s.cu in 7f03b82), the mmvs
    # f64 rows of the capped interleaved GLU, CUDA-vs-CPU incl. CudaModels.MmvsCapSameBytesAndSpillRule;
    # --perf of the interleaved GLU at caps 0 / 5 / 6; tg128 arms base / fallback 5 on q4_k_m d0 /
    # d4096 and qwen3-32b q4_k_m; q8_0 with its GLU at 5 despite a 44-byte spill; a d0 trace with
    # the fallback for the step's per-kernel times.
    gpu_info
    timeout 170 "$bin/kernel-check" --section mmvs_id --seed 20261230 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 4
    for flt in q8s ail_glu; do
      timeout 60 "$bin/kernel-check" --section mmvs --filter $flt --seed 20261230 \
        --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 3
    done
    cuda_vs_cpu "MmvsCap|MmvsActIl" 8
    mmvs_perf 20261231 mmvs_ail_glu/Q4_K mmvs_ail_glu_cap5/Q4_K mmvs_ail_glu_cap6/Q4_K mmvs_ail_glu/Q8_0 mmvs_ail_glu_cap5/Q8_0
    arms="--arm configs/arm-base.toml --arm configs/arm-mmvs-cap-fallback-5.toml"
    tg qwen3-8b q4_k_m 0,4096 6 170 $arms
    ;;
  fb19b)
    # The second call of fb19: qwen3-32b q4_k_m arms base / fallback 5, a d0 trace with the
    # fallback. (The q8_0 arm of its GLU at 5 was not run: at kernel level the spilling cap-5 Q8_0
    # GLU was slower, 31.30 -> 34.14 us at 12288x4096, in the fb19 call.)
    gpu_info
    tg qwen3-32b q4_k_m 0 5 150 --arm configs/arm-base.toml --arm configs/arm-mmvs-cap-fallback-5.toml
    synth qwen3-8b q4_k_m
    timeout 60 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0 -r 2 --set kernels.mmvs_cap_fallback=5 \
      --set receipt.hash_model=false --set kernels.prefill_f16_weights=false --trace "$out/trace-d0.jsonl" \
      --receipt "$out/pp-bench-trace.jsonl" 2>&1 | grep -E "^trace|mmvs|attn|norm|quantize" | head -n 20
    gzip -f "$out"/trace-d0.jsonl
    rm -f "$f"
    ;;
  final19)
    # 2026-12-03 (nineteenth session), closing call with kernels.mmvs_cap_fallback = 5 by default:
    # gates (kernel-check mmvs_id, CUDA-vs-CPU incl. the fixed MmvsCapSameBytesAndSpillRule), then
    # the README decode rows, q4_k_m with an arm of the fallback off.
    gpu_info
    closing_rows 20261233 "MmvsCap|MmvsActIl|MmvsPreload" mmvs_id --arm configs/arm-base.toml --arm configs/arm-mmvs-cap-fallback-off.toml
    ;;
  final17)
    # 2026-12-02 (seventeenth session), closing call with kernels.mmvs_act_il on by default: gates
    # (kernel-check mmvs_id incl. mmvs_ail at caps 0/6/8/12, the interleaved producers, CUDA-vs-CPU),
    # an arm of the spilling capped GLU (kernels.mmvs_cap_no_spill = false) on q4_k_m d0, then the
    # README decode rows (closing_rows without arms).
    gpu_info
    for sec in mmvs attn; do
      timeout 90 "$bin/kernel-check" --section $sec --filter _il --seed 20261227 \
        --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 3
    done
    tg qwen3-8b q4_k_m 0 5 90 --arm configs/arm-base.toml --arm configs/arm-mmvs-cap-spill-ok.toml
    closing_rows 20261227 "MmvsActIl|MmvsCap|MmvsPreload" mmvs_id
    ;;
  probe16)
    # 2026-12-02 (sixteenth session), for planning: why the plain Q4_K matvec streams at ~0.57 of
    # 4.8 TB/s in steady state (the 151936-row head at kernel level) where Q6_K reaches ~0.76 and Q8_0
    # ~0.9, and the Q4_K down ~0.35: ncu --set full of one launch each (kernel-check cases, no PDL,
    # the default register form), key lines printed, reports under $OUT; then ncu's per-kernel time,
    # DRAM bytes and throughput of the kernels of qwen3-8b q4_k_m decode steps (serialized by ncu).
    gpu_info
    export LD_LIBRARY_PATH=$PWD/.device/lib
    ncu_cases mmvs_kernel "^  void|Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issued Ipc|Warp Cycles Per Issued|No Eligible|L2 Hit Rate|L1/TEX Hit|Executed Instructions  " \
      "q4k-head|mmvs/Q4_K/151936x4096/m1" "q8-head|mmvs/Q8_0/151936x4096/m1" "q6k-head|mmvs/Q6_K/151936x4096/m1" \
      "q4k-down|mmvs_splitw2/Q4_K/4096x12288/m1" "q4k-glu|mmvs_glu/Q4_K/12288x4096/m1"
    synth qwen3-8b q4_k_m
    timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
      --csv --launch-skip 700 --launch-count 330 "$bin/run-gen" "$f" -p "a" -n 4 --receipt /tmp/ncu-run-gen.jsonl > "$out/ncu/ncu-step.csv" 2>/dev/null
    echo "ncu step rc=$?"
    rm -f "$f"
    python3 - "$out/ncu/ncu-step.csv" <<'PY'
import csv, sys, collections, io
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")  # ncu's CSV can carry non-UTF-8 bytes
rows = [r for r in csv.reader(io.StringIO(raw)) if len(r) > 10]
hdr = rows[0]
ki, mi, ui, vi, ii = (hdr.index(x) for x in ("Kernel Name", "Metric Name", "Metric Unit", "Metric Value", "ID"))
gi = hdr.index("Grid Size") if "Grid Size" in hdr else None
scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "msecond": 1e3, "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3, "%": 1.0}
per = collections.defaultdict(dict)
for r in rows[1:]:
    name = r[ki].replace("void ", "").replace("memra::cuda::", "").replace("(anonymous namespace)::", "").replace("memra::QType", "T")
    per[(r[ii], name[:60] + (" " + r[gi] if gi is not None else ""))][r[mi]] = float(r[vi].replace(",", "") or 0) * scale.get(r[ui], 1.0)
agg = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
for (i, k), m in per.items():
    a = agg[k]; a[0] += 1; a[1] += m.get("gpu__time_duration.sum", 0); a[2] += m.get("dram__bytes_read.sum", 0)
    a[3] += m.get("dram__throughput.avg.pct_of_peak_sustained_elapsed", 0); a[4] += m.get("sm__warps_active.avg.pct_of_peak_sustained_active", 0)
print(f"{'kernel (grid)':78s}   n  mean_us  MB_read  TB/s  dram%  warps%")
for k, a in sorted(agg.items(), key=lambda x: -x[1][1]):
    n = a[0]; t = a[1] / n; mb = a[2] / n
    print(f"{k:78s} {n:3d} {t:8.2f} {mb:8.2f} {mb / t if t else 0:5.2f} {a[3] / n:5.1f} {a[4] / n:5.1f}")
PY
    tar czf "$out/ncu.tar.gz" -C "$out" ncu && rm -rf "$out/ncu"
    ;;
  probe)
    # What the next lever needs, ~3 minutes: full ncu sections of the two kernels that bound the
    # decode step (the qwen3-8b GLU matvec, the split-K attention at 16383 keys; each one launch,
    # key lines printed, whole reports under $OUT), the matvec_v2 times beside mmvs (v2 is still
    # unmeasured), then the per-kernel time table of a real decode step.
    gpu_info
    export LD_LIBRARY_PATH=$PWD/.device/lib
    for k in "mmvs_kernel|mmvs_glu/Q4_K/12288x4096/m1" "attn_decode_gqa|attn_decode/q8_0-q5_1/32-8x128/n1@16383"; do
      kern=${k%%|*}; case_name=${k#*|}; tag=${kern%%_*}
      timeout 90 ncu --clock-control none --set full -k regex:"$kern" --launch-count 1 \
        "$bin/kernel-check" --filter "$case_name" > "$out/ncu-$tag.txt" 2>&1
      grep -E "^  void|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issued Ipc|Warp Cycles Per Issued|Est. Speedup" \
        "$out/ncu-$tag.txt" | head -n 14
    done
    timeout 60 "$bin/kernel-check" --section matvec_v2,mmvs --filter x4096 --perf --seed 7 \
      --receipt "$out/kernel-check-perf.jsonl" | grep -E "/m1 |_r8/" | grep -E "4096x4096|12288x4096|151936" | tail -n 24
    mkdir -p "$synth_dir"
    f="$synth_dir/qwen3-8b-q4_k_m.gguf"
    "$bin/gguf-synth" --preset qwen3-8b --mix q4_k_m --out "$f" --seed 1234 --receipt "$out/gguf-synth.jsonl" >/dev/null
    ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-count 1200 \
      "$bin/run-gen" "$f" -p "a" -n 3 --receipt /tmp/ncu-run-gen.jsonl > "$out/ncu.csv" 2>/dev/null
    python3 scripts/ncu_summary.py "$out/ncu.csv" 45
    rm -f "$f"
    timeout 60 "$bin/rp-q4-probe" --receipt "$out/rp-q4-probe.jsonl" | tail -n 20
    timeout 280 "$bin/kernel-check" --section all --seed 20261204 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 30
    ;;
esac
# The device tool brings back at most 8 files from $OUT: past that, the timelines, the test logs
# and gguf-synth.jsonl travel in one tar (nd31c's ninth file, a timeline, stayed behind). The phase
# log, still being written, stays out.
if (($(find "$out" -maxdepth 1 -type f | wc -l) > 8)); then
  (cd "$out" && tar -cf bundle.tar --remove-files $(ls trace*.jsonl.gz test_*.log gguf-synth.jsonl 2>/dev/null)) &&
    echo "more than 8 files: timelines, test logs and gguf-synth.jsonl in bundle.tar"
fi
echo "== done $(date -u +%FT%TZ)"
