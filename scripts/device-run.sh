#!/usr/bin/env bash
# Runs on the H200 machine from the repository root, with .device/ carried (scripts/device-prepare.sh).
# usage: scripts/device-run.sh PHASE OUTDIR
# General phases:
#   gates  : environment + ldd smoke, kernel-check (all sections, then --perf), rp-q4-probe,
#            CUDA-vs-CPU tests, run-gen on stories260K (cuda and cpu)
#   first  : kernel-check all + the CUDA-vs-CPU model tests (a session's first call)
#   gates2 : CUDA-vs-CPU tests, run-gen both backends, kernel-check all (a final commit's gates)
#   final  : everything in one call: kernel-check all, CUDA-vs-CPU model tests, run-gen, pp-bench
#            rows of every README model plus the A/B arms
#   bench8 : gguf-synth qwen3-8b q4_k_m -> pp-bench rows -> delete (then q8_0, q4_0 when $3 = all)
#   bench32: gguf-synth qwen3-32b q4_k_m -> pp-bench tg128 / pp512 -> delete
#   probe  : full ncu sections of the GLU matvec and the depth attention, matvec_v2 vs mmvs
#            times, per-kernel times of a decode step, rp-q4-probe, kernel-check all
#   arch35 : the non-qwen3 architectures' kernels and CUDA-vs-CPU tests (qwen35, qwen3moe, gemma3/4)
# When only an H100 is lent: g39a then g39b (every queued phase's gates; the rows wait for an H200),
# then spec40 and md41 (their gates hold on any sm_90 card; their times are the card's own). All
# four ran on an H100 in the forty-first session (receipts/h100/), and fix41 after its fixes: green.
# With ~4 minutes of device time left: g40 (the suite gates and the speculative GPU tests).
# Ran in the forty-second session on an H100 (receipts/h100/*-a6cfa22-20261205*): rpv41 (the verify row
# pairs: flipped on), fold37 (the fold stays on), ms38 (gates green, no gain on the H100: stays off).
# And s37a on the one H200 lent (receipts/h200/*-s37a-7d9ab71-*: the README decode rows since), h42 and
# attn42 on H100s (the step's timeline at the defaults, ncu of the d0 attention).
# Ran in the forty-third session (receipts/h100/*-{e0ca606,79302c4}-20261205*, receipts/h200/*-79302c4-*):
# ni42 (the norm inside the q/k/v launch: 0.906x-0.928x, dropped and removed), pr42 (the residual
# launches' preload off: 0.944x / 0.950x, the preload stays), h43 (ms38's and rpv41's rows on the
# H200), moe37 and moe37b (two MoE keys flipped on), t43 / t43b (the 16384-key step's timeline; the
# GLU's depth effect).
# Ran in the forty-fourth session, all on H100s (receipts/h100/*-{375ec79,a461eb3}-20261205*): moe43's
# gates (its rows want an H200), rb43 (the mmvs-row-arith candidate 0.994x: not landed), q5k34 +
# q5k34t (Q5_K / IQ4_XS on mmvs 1.77x / 1.78x: the default since), s36c (mmvf2 1.35x on f16 at 1 row
# per warp; its flip waits on g44), sk33b (the 32B split rule and GLU pairs: the defaults stay).
# Ran in the forty-fifth session, all on an H100 (receipts/h100/*-61c2f62-20261205*): chain45 (the
# persistent decode-chain probe's first run: checks green, full 0.69 / no-deps 0.91 / stream 0.96 of
# the H100's 3.35 TB/s, 1.19x the launches), g44 (mmvf2's gates: flipped on at 1 row per warp), ds44
# (the device sampler: 1.08-1.09x, flipped on to top_k 512), moe44 (the MoE gate + up launch: 1.04x,
# flipped on), moe44t (the MoE step's first timeline), q5k44 (Q5_K row pairs with one task: 1.026x,
# flipped on; IQ4_XS left out).
# Ran in the forty-ninth session on H100s (receipts/h100/*-{en49*,nd49,ge49*,s49}-*-20261206*): en49 /
# en49b / en49g (kernels.mmvs_emit_norm: 1.023-1.058x, gates green: on), en49h (its depth rows), nd49
# (the 32B with the deferred norm at every width: 0.927x, the emit's one-wave rule), ge49 / ge49b
# (kernels.mmvs_glu_emit: on for q4_k and q4_0), s49 (the suite at the new defaults, 61/61); and r49
# with a follow-up on the one H200 lent (receipts/h200/*-r49*-934c2af-*: the README decode rows, q8_0
# 449.09 tok/s). en49* / ge49* / nd49 / s49 stay below for their receipts' sake until the next cleanup.
# Ran in the fifty-second session, all on H100s (receipts/h100/*-{pm52,pm53,bp52,gt52,gt52b,s52}-*-20261206*):
# pm52 / pm53 (the steps' DRAM sampled: bench/notes/decode-trace.md, last section), bp52 (the attention's
# blocks per SM 2 / 8: 0.897x / 0.901x at 16384 keys), gt52 / gt52b (kernels.attn_grid_round: gates
# green, default 8) and s52 (the suite 63/63 and the attention gates at it); bp52's phase and arms removed
# (git show 9836b5b). h52 (the README rows and the DRAM sampling on an H200) found H100s twice: queued
# first for the next session, then gt52b on the same H200 (the trimmed grid against the full one on the card
# of the targets), r50 (the MoE row), chain48 / chain45 / md41 on an H200.
# Ran in the fifty-third session on H100s (receipts/h100/*-{ew53,ew53b,ew53c,s53}-*-20261206*): ew53 / ew53b
# (kernels.mmvs_emit_norm_warps_wide with the deferred norm at every width: qwen3-32b tg128 1.035x q4_k_m,
# 1.084x q4_0, flipped on; the GLU emit on the 32B 0.960x), ew53c (the 8B unchanged, 1.000x), s53 (the suite at
# the new defaults 64/64, the embedding gate). No H200 came (five tries). Queue: h52 on an H200 first, then
# h53 on the same H200 (the qwen3-32b README row at the new defaults beside the reversed arm), then as before.
# Ran in the fifty-fourth session on H100s (receipts/h100/*-{ov54,ov54b}-*-20261206*): ov54 / ov54b (the GLU's
# first CTAs landing beside an 8-warp o projection during the attention: every arm 0.889-0.989x; the o
# projection alone at 8 warps 0.963x, the landing one-task GLU ~3% back; kernels.mmvs_glu_emit_warps and
# kernels.mmvs_emit_norm_warps_short stay off). Two of fourteen calls ran (the rest failed or were refused); no H200 came.
# (ov54c ran in the fifty-fifth session.)
# Ran in the fifty-fifth session on H100s (receipts/h100/*-{ov54c,ov54d,w55,r55,x55}-*-20261206*, logs/*w55b*):
# ov54c / ov54d (the 8-warp o projection with both groups beside the 8-warp emitting GLU: q4_0 1.033-1.049x,
# q4_k_m 0.894x), then the flip for q4_0 (kernels.mmvs_emit_norm_short_w8 / kernels.mmvs_glu_emit_w8 type lists,
# default q4_0), w55 / w55b (its gates, the suite 64/64, reversed 0.958x / 0.988x at 0 / 4096 keys; Q4_K
# without spill still 0.903x; ncu: the 8-warp Q4_K GLU latency-bound), r55 (q4_0 at 16384 keys, reversed
# 0.977x), x55 (IQ4_XS: every 8-warp form loses), kc55 (an ad-hoc kernel-check --perf, mmvs at 12288 x 4096). Nine calls of seventeen ran
# (the rest failed starts or refusals); every one on an H100, r55h found one again.
# Queue: r55h on an H200 first (the README's 8B rows at the new defaults: q4_0's row moves), or h52 (the
# same rows with the DRAM sampled, a "trace" pack), then h53 on the same H200, then as before.
# Fifty-sixth session: st56 on an H100 (the o projection staged in shared memory beside a 96-register GLU:
# 0.917x / 0.882x at 0 / 4096 keys, dropped; its phase and code: git show a9fc8ae), rl56 twice (the emitting
# launches' rolling loads: the down 1.076x alone, the step 0.998x / 0.999x, dropped; git show 1a64eee). The
# "slim" pack went over the carry limit: a "dense" pack (device-prepare.sh) for the dense phases. s56 found
# an H100 (its kernel-check --perf ran; an ad-hoc ncu of IQ4_XS's GLU beside it). Fifteen calls, six ran, all
# on H100s. Queue: r55h on an H200 (the README 8B rows; s56 does the same there), then h53 on the same H200 (the 32B row;
# now a "dense" pack too), then r50, chain48 / chain45 / md41 on an H200.
# Fifty-seventh session: iq57 on an H100 (IQ4_XS's codebook lookup by two sign-mode permutes: gates 406/406,
# qwen3-8b iq4_xs tg128 1.110x / 1.117x against the build before it; receipts/h100/*-iq57-cb854bd-*), x55 again
# on the new build (the IQ4_XS emit forms still lose). Nine calls: three ran (all on H100s), four failed starts, two refused;
# no H200. Queue: r55h on an H200, then h53 on the same H200, then g57 (any card), r50, chain48 / chain45 / md41.
# Fifty-eighth session: i858 on an H100 (the split-plane int8 attention probe, kernels/attn/attn_decode_i8.cu: gates
# 9/9, 16384 keys 0.712x / 0.736x the default depth kernel's time; receipts/h100/*-i858-18b9626-*), g57 in the same call
# (one task stays: 0.986x / 0.984x). No H200 came (ten tries, one ran). Queue: r55h on an H200, then h53 on the same
# H200; i858c (or i858b, its longer form) on any card (where the probe's time goes); then r50, chain48 / chain45 / md41.
# Fifty-ninth session: kv.planes built (the split-plane q8_0 cache in the engine, the tile form's fold; bench/notes/
# attn-i8-tile.md, "In the engine"); its gates and rows are kvp59 (any card, ~5 minutes: every planes gate, the GPU
# test, tg128 at 0 / 4096 / 16384 keys against the planes with and without the fold), or kvp59s / kvp59t in a short
# call. Queue: kvp59 first (on an H200 then r55h and h53 on the same machine), i858c, r50, chain48 / chain45 / md41.
# Sixtieth session: kv.planes at 8 query heads per kv head (qwen3-32b); its gates and 32B rows are kvp60 (any card,
# ~6 minutes); two tiles in flight per warp in the tile form (kernels.attn_planes_stages) is kvp60b (~4 minutes).
# Queue: kvp59, kvp60b, kvp60 (one call each; kvp60c is kvp59 + kvp60b cut to one short call), then as above.
# Sixty-first session (four calls ran on H100s of twelve minutes' budget, receipts/h100/*-{kvp60c,kvp60,kvp61}-*):
# kvp60c / kvp60 / kvp61 (every planes gate green; planes 0.971x / 1.032x / 1.034x at 0 / 4096 / 16384 keys on the
# 8B, 0.967x / 1.162x at 0 / 16384 on the 32B; two stages no gain; kvp59, kvp60b and kvp60 are done). Built after:
# the tile form's head split. Queue: kvp61h (its gates and the 8B rows at 0 / 4096 / 16384: kv.planes' default
# turns on if all three are >= 0.99x with 16384 a win), t61 (timelines of the planes, a "trace" pack), i858c
# (ncu of the tile form at 16384 keys), then on an H200 r55h and h53 on the same machine, r50, chain48 / chain45 / md41.
# Sixty-second session (three calls on one H100: kvp61h, i858c, k32; receipts/h100/*-{kvp61h,i858c,k32}-973ed0a-*):
# planes 1.005x / 1.018x / 1.025x / 1.040x at 0 / 1024 / 4096 / 16384 keys (8B), 1.013x / 1.161x (32B): kv.planes
# became "auto" (the default), kernels.attn_planes_head_pairs false. The budget ran out before the suite at the
# new defaults ran. Queue: suite62 first (~2.5 min) or flip62 (the suite and the flip's rows, ~5; on an H200 the
# README rows instead), t61, then on an H200 h53, r50, chain48 / chain45 / md41.
# Sixty-third session (eleven calls, all on H100s; receipts/h100/*-{s63,s63m,bps63,hm63,g63}-*): s63 / s63f (the
# copy-engine tile forms: gates green, tensor 0.995x / bulk 0.975x at 16384 keys: async stays, bulk removed; the
# suite at kv.planes = auto green), s63m (the MoE row: planes 1.038x / 1.123x / 1.394x at 0 / 4096 / 16384),
# bps63 (2 / 3 blocks per SM: no gain), hm63 (3f35d3e: head-major planes in the probe, no gain; the probe's strides removed after), g63 (every tile gate after the bulk
# form's removal), mb63 (a4d9b98: the tile form's registers capped for 5 / 6 blocks per SM, 0.945x / 0.917x at
# 16384 keys: reverted). Four r63 calls asked for an H200 and got H100s. Queue: r63 on an H200 first (the README rows
# at the new defaults), then t61 (a "trace" pack), h53, r50, chain48 / chain45 / md41.
# Sixty-fourth session (two calls on one H100; receipts/h100/*-{cl64,r64}-0d1aa66-*): cl64 (0d1aa66: the tile form's
# group blocks as thread block clusters with the combine inside, kernels.attn_planes_cluster: every gate green,
# 0.872x / 0.831x at 4096 / 16384 keys with clusters of 4 splits, 0.976x / 0.946x of 2: reverted), r64 (on an H100:
# timelines of the planes defaults at 0 / 4096 / 16384 keys and the planes off at 16384; its H200 branch, the README
# rows, is r63's). Built after: kernel-check --perf-kernels (phase kt64, any card, ~2 minutes: each launch's own kernels
# on the device beside the event times) and rows64 (r63's README rows, H200 only, nothing elsewhere); no machine came
# for either in four more asks. Queue: rows64 on an H200 first, kt64, then t61 (a "trace" pack), h53, r50, chain48 /
# chain45 / md41.
# Sixty-fifth session (three calls on one H100 of eight asks; receipts/h100/*-q65{s,b,c}-7c84904-*): q65s (the q/k/v
# launches as row quads, kernels.mmvs_qkv_quads: gates green, quads 1 tg128 1.014x / 1.014x at 0 / 4096 keys), q65b
# (q4_0 0.999x, q8_0 1.005x, q4_k_m at 16384 keys 1.013x), q65c (the suite with quads 1 as its base: no logit byte
# changed; the reversed row 0.980x): flipped to 1; the q65 / q65s blocks removed. Queue: rows64 on an H200 first (the
# README rows, now at quads 1), s65 (the suite at the new defaults, ~3 minutes), q32 (the 32B's quads row), kt64,
# then t61 (a "trace" pack), h53, r50, chain48 / chain45 / md41.
# Sixty-sixth session (one H100, receipts/h100/*-{s65,q32c,kt64}-d6b7469-*): s65 (the suite at quads 1: 57/57, kernel-check
# mmvs_rq 18/18, mmvs_pair_rq 6/6, every quad f64 row 16/16), q32c (qwen3-32b q4_k_m tg128, one arm resident at a time:
# quads 1 131.75 / 131.79 first / last against the pairs' 131.35, 1.003x; quads 2 131.73; q32's interleaved form of the
# last session did not fit the H100's memory with four copies of the 32B and stopped with the loader's clear error),
# kt64 (--perf-kernels' first run: the one-kernel spans read right, the two-kernel launches' spans ~320 us, a previous
# rep's record inside the trace; fixed in the next commit: records before the trace's start are left out, and reps of
# another kernel count). s65 / q32 removed. Then lf66 / lf66b on one H100 (receipts/h100/*-lf66{,b}-d0c5611-*):
# kernels.attn_fold_loads_first gated (kernel-check fused _lf 30/30, CudaModels.AttnFoldLoadsFirstSameBytes and
# KvPlanesAgainstOracle) and measured (qwen3-8b q4_k_m 1.006x / 1.004x / 1.005x at 0 / 4096 / 16384 keys, A/A 1.001x /
# 1.006x / 1.003x; qwen3-32b 1.004x): on by default; its phase removed (git show d0c5611). The two-kernel device spans
# were still ~400 us with the records filtered by the trace's start: kernel-check now also reports the kernels' busy
# time (the union of their intervals) and the last rep's kernels (names, durations, offsets) in the receipt.
# Then s66 and kt64 on an H100 (receipts/h100/*-{s66,kt64}-0136baa-*): the suite at loads first on 58/58, fused _lf
# 30/30; kt64's busy times (the two-kernel spans are CUPTI holding the PDL-dependent launch 370-500 us). s66 and
# kt64 removed (git show 0136baa).
# Sixty-seventh session (two calls on one H100; receipts/h100/*-{qr66,nc66}-42ccc32-*): qr66 (kernels.attn_fold_q_regs:
# gates green, tg128 0.996x / 1.008x / 1.008x at 0 / 4096 / 16384 keys against A/A 1.003x / 1.007x / 1.005x: dropped,
# its code replaced by the spread form), nc66 (ncu with SASS counters of the one-key attention: warp 0's path after the
# wait ~1400 instructions at ~7 cycles each, the fold ~460 of them; bench/notes/attn-i8-tile.md). t61 removed (r64
# took the planes' timelines at the defaults). Then sp67 / sp67b on an H100 (receipts/h100/*-{sp67,sp67b}-aae829a-*):
# kernels.attn_fold_spread (the head split's heads taken whole by every warp; built this session after nc66): gates green
# (kernel-check fused _sp 20/20, the GPU test), the one-key launch's device time 7.14 -> 6.59 us, tg128 1.001x / 1.002x at
# 0 keys (A/A 1.014x / 1.002x), 0.994x at 512 (A/A 1.009x): dropped, its code removed (git show aae829a). Built
# after: kernels.probe_attn_delay_cycles (a diagnostic). Queue: ad67 (any card, ~3 minutes: does the step wait for the
# attention's end at 0 keys?), rows64 on an H200 (the README rows at quads 1 + loads first), then h53, r50, chain48 /
# chain45 / md41 on an H200.
# Sixty-eighth session: no machine started (fifteen asks: about twelve failed starts at 90-180 s each, the rest refused while
# none was lent; the budget went to the failed starts). ad67 gained a + 12000-cycle arm (the slope past the window)
# and three d0 timelines (base, + 6000, q4_0: scripts/trace-exposed.py --chain; bench/notes/decode-trace.md "The chain").
# Built after: kernels.mmvs_emit_norm_short_rows64 (the o projection on 64 whole SMs; phase o68, any card).
# Queue: ad67 and o68 on any card (one warm machine: ~8 minutes), rows64 on an H200, then h53, r50, chain48 /
# chain45 / md41 on an H200.
# Sixty-ninth session (two calls on one H100; receipts/h100/*-{ad67,o68}-8099aed-20261207*, logs/trace-*-{ad67,o68}-*):
# ad67 (the attention-delay probe: 0.990x / 0.960x / 0.903x at + 2000 / 6000 / 12000 cycles at 0 keys, 0.984x /
# 0.953x / 0.903x at 512: the attention's end is on the step's path with ~0.5 us of slack at 0 keys, none at 512;
# the timelines confirm the chain reading), o68 (kernels.mmvs_emit_norm_short_rows64: gates green, the GLU started
# 5.8 us before the attention's end, the step 0.971x / 0.975x: dropped, code removed; git show 3cb8eb7). The
# attention tests' F32 cases need the models a "dense" pack leaves out (their 0 ms failures in ad67's log).
# Then rows64 with "any" on an H100 (receipts/h100/pp-bench-rows64h-8099aed-*: the README's rows at HEAD on the card
# that came; asking for nvidia-h200 brought an H100 too).
# Built after: kernels.mmvs_glu_emit_persist (the GLU as one persistent wave; phases ps69 / ps69b, any card). ps69 was
# asked for four times after it (failed starts and refusals) until 288 s of device time were too little to start one.
# Seventieth session (two calls on one H100; receipts/h100/*-ps69*-7d9a6b6-20261207*): ps69 (kernels.mmvs_glu_emit_persist:
# gates green, the launch alone 1.063x the time, tg128 q4_k_m 0.986x / 0.988x at 0 / 4096 keys: dropped, code removed;
# git show 439169f), and a kernel-check --perf of the 32B's shapes (ps69p: the persistent emit 1.014x the plain emit's
# time), so ps69b was not run. bench/notes/mmvs-glu-persist.md.
# Then rows64 on the card that came (an H100 though nvidia-h200 was asked for: nothing run) and, on that warm machine,
# s70: the CUDA-vs-CPU suite at 516e63e (58 passed; the 9 failures are the qwen3moe tests, whose files a "dense" pack
# leaves out: receipts/h100/test_backend_cuda_gpu-s70-*) and kernel-check at the defaults cut at 280 s (783 of 4480 cases
# passed, none failed, no receipt: receipts/h100/logs/kernel-check-s70-*).
# rows70q (added for the last 331 s) was refused as too little to start a machine.
# Queue: rows64 on an H200 (rows70q where less than ~10 minutes are left), then h53, r50, chain48 / chain45 / md41 on an H200.
# Seventy-first session: kc71 (kernel-check section by section, any card; the fallback of an ask for rows64 that brings
# an H100) and hd71 (H200 only: the planes attention's two H100-decided keys at depth, the 8-warp Q4_K o / GLU at 0 keys).
# No machine came in the seventy-first session (seven asks for nvidia-h200 and one for nvidia-h100-x1 failed or were
# refused; then loans were paused): rows64, hd71 and kc71 all wait. Queue: rows64 then hd71 on one warm H200, then h53,
# r50, chain48 / chain45 / md41 on an H200; kc71 on any card.
# Queued in the fifty-first session: pm52 first (pp-bench --pm-sample's first run: where the step's DRAM
# idles; a "trace" pack; any card, an H200 preferred).
# Queued after the fiftieth session (no H200 came in its calls or in the fifty-first's; gb51 and nd50 ran
# in the fifty-first on an H100, see below): r50 (the README rows at its HEAD and moe43's MoE row, H200
# only), then hn50 on an H200 (its two-call form above). Then,
# from before:
# The queued measurements, in the order the next session should take them (each describes itself
# at its case label): moe43 (the suite at the defaults, then on an H200 the MoE README row at the
# defaults, now with the gate + up launch, the fused router and the combine into the stream), s49's
# depth rows and q4_0 beside the reversed arms on an H200 (r49 took the defaults' rows only), chain48
# (the chain probe's per-task work and ring depth; an H200), chain45 on an H200 (the launch comparison
# beside the chain; s45 ran the chain alone there), md41 on an H200 for its times beside the H200 anchors.
# Also ran in the forty-fifth session: s45 on an H200 (the suite at the new defaults 58/58, the device
# sampler 1.135x, the chain probe: shelved) and glu43 on an H200 (the Q4_K GLU is not issue-bound: 43% of
# the issue slots, 28% occupancy; rb43 and its branch dropped).
# Ran in the forty-sixth session on H100s (receipts/h100/*-rf46*-{1c3b2db,27e1822}-2026120[56]*): rf46
# (kernels.moe_router_fused: first form 0.857x, the staged form 1.075x / 1.073x, flipped on;
# kernels.moe_routed_chunk_pairs 0.959x / 0.934x, removed) and rf46t (ncu of the fused router, the MoE
# step's timelines: the attention norm's add on one block, 6.4 us per layer, is the next MoE lever).
# Ran in the forty-seventh session on an H100 (receipts/h100/*-{w47,rc46}-afb11c0-20261206*): w47
# (kernels.mmvs_rp_one_cap8, the downs' one-task pairs at 8 CTAs per SM: one wave, kernel level 0.95x /
# 0.97x / 1.12x Q4_K / Q8_0 / Q6_K, tg128 0.986x q8_0 (A/A 0.984x), 1.004x q4_k_m, 0.964x with Q6_K:
# removed) and rc46 (kernels.moe_combine_residual 1.044x on qwen3-30b-a3b q8_0, gates green: on); moe43's
# suite at the new defaults on an H100 (60/60; receipts/h100/logs/*-moe43-57a3ae5-20261206*; its H200 rows
# still queued).
# Ran in the forty-eighth session on an H200 (receipts/h200/*-mma47-35ad82e-20261206*): mma47 (the chain
# probe's tensor-core consumers: Q4_0 no-deps 0.816 vs dp4a 0.815, full 0.559 vs 0.592; Q4_K no-deps 0.708
# vs 0.625, full 0.485 vs 0.428; the persistent step stays shelved); on H100s (receipts/h100/*-chain48*-2026
# 1206*): chain48 three times as it grew (pages_only: the consumers' page work is free there, per-task work
# 6-15%; the split schedule: passes, loses 0.86x, the same ~395 us of boundaries as the tasks schedule).
# chain48 stays queued for an H200 (its no-deps gap there, both schedules).
# nd33 only if the 32B loss of the deferred norm is understood.
# Ran in the fiftieth session on H100s (receipts/h100/*-{t50,gr50,gr50b,hn50}-*-20261206*): t50 (the step's
# timelines at 4daf0ae), gr50 / gr50b (the GLU emit's resident form with and without a barrier: 0.993x /
# 0.998x q4_k_m, removed; the phases with them, git show 6a6944e:scripts/device-run.sh), hn50 (the Q4_K
# high nibbles in place against the build before, two calls on one warm machine: 1.001x, kept), gw50
# (the GLU emit in 32-warp CTAs: kernel level 1.015-1.022x, tg128 0.982x q4_k_m: removed with its phase),
# t50b (the qwen3-32b q4_k_m step's timeline), qw50 (the q/k/v launches in one wave: kernel level
# 1.06-1.21x, tg128 0.989x q4_k_m, 0.969x q8_0: removed with its phase; git show 6ac5722).
# Ran in the fifty-first session on an H100 (receipts/h100/*-{gb51,nd50}-f82b439-20261206*): gb51 (the GLU
# emit's bulk form: kernel level 0.73x / 0.70x Q4_K / Q4_0, tg128 0.80x / 0.82x q4_k_m d0 / d4096, 0.81x
# q4_0: removed with its phase; git show f82b439), nd50 (qwen3-32b with the norms deferred at every width,
# the scale by the norm 1.003x, by the matvecs 1.000x against two base runs: the defaults stay; its phase
# and arm removed, git show f82b439).
# Also on an H100 in the fifty-first session: gs51 (the GLU emit's staged form, cp.async: kernel level 1.013x
# Q4_K / 1.157x Q4_0, tg128 0.955-0.958x: removed with its phase; git show 01d6618) and co51
# (kernels.smem_carveout 100 / 50 for every decode kernel: 0.986x / 0.994x q4_k_m, 100 0.948x q4_0; the
# key stays at -1, the driver's choice; its phase, git show 01d6618), co51b (0 / 28 / 40 for every decode
# kernel: 0.972-0.985x at 0 keys, 0.79-0.93x at 4096; its phase, git show ce05695).
# And cw51 (kernels.smem_carveout_attn, the split for the attention block's launches only: 100 0.975x /
# 0.972x q4_k_m at 0 / 4096 keys, 0.963x q4_0; 72 0.975x / 0.992x: removed with its phase; git show cc29e6d).
# The phases of earlier sessions (the ones bench/notes/ and receipts/ name, ~100 of them) were
# removed once run; each receipt names its commit, and `git show ab83d79:scripts/device-run.sh`
# has them all.
# pp-bench interleaves its arms (bench.interleave, every arm resident): qwen3-32b prefill rows with
# several arms pass --set bench.interleave=false (three arms' weights, split copies and f16 prefill
# copies do not fit one H200 together).
# Packs (scripts/device-prepare.sh): "slim" for gates and rows (51 MiB of the 64 MiB carry with the
# tree of the forty-second session; "quant", with the gemma3 / gemma4 f32 models, had 1 MiB left),
# "trace" for the --trace phases (CUPTI, no fixtures), "f32" for the float-weight gates (kernel-check
# and the GPU tests with four f32 synth models only: 61 MiB of carry).
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
  # A "quant" or "slim" pack (device-prepare.sh) leaves out some f32 synth models: their tests are skipped.
  local skip="" t
  for t in Llama:llama Qwen2:qwen2 Qwen3:qwen3 Gemma3:gemma3 Gemma4:gemma4; do
    [ -f "$sh/models/synth/${t#*:}-f32.gguf" ] || skip="$skip:CudaModels.${t%%:*}_F32*"
  done
  # A "dense" pack has no qwen3moe files (a "moe" pack no dense q8_0 / f32 ones): their tests are skipped.
  [ -f "$sh/models/synth/qwen35-q4_k_m.gguf" ] || skip="$skip:CudaModels.Qwen35*:CudaModels.Speculative*"
  [ -f "$sh/models/synth/qwen3moe-q4_k_m.gguf" ] || skip="$skip:CudaModels.Qwen3Moe*"
  if [ -n "$skip" ]; then echo "cuda_vs_cpu: synth models not in this pack, skipped: ${skip#:}"; fi
  # suite_args (e.g. --config FILE: the base configuration of every test) and suite_tag (the log's
  # name suffix) are set by a phase around a call; empty by default.
  timeout 150 "$bin/test_backend_cuda_gpu" --shared "$sh" ${skip:+--gtest_filter=-${skip#:}} "${suite_args[@]}" \
    > "$out/test_backend_cuda_gpu$suite_tag.log" 2>&1
  echo "test_backend_cuda_gpu$suite_tag rc=$?"
  grep -E "^\[  (PASSED|FAILED) |FAILED${1:+|$1}" "$out/test_backend_cuda_gpu$suite_tag.log" | tail -n "${2:-10}"
}
suite_args=()
suite_tag=""
suite_with() {  # tag base-configuration-args...: the whole CUDA-vs-CPU suite from that base (log test_backend_cuda_gpu-TAG.log)
  suite_tag="-$1"
  shift
  suite_args=("$@")
  cuda_vs_cpu "base configuration" 10
  suite_args=()
  suite_tag=""
}
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
kc_gate() {  # tag seed limit_s section filter: one kernel-check gate run (log $out/kc-TAG-SECTION.log), its FAILs and summary
  local log="$out/kc-$1-$4.log"
  timeout "$3" "$bin/kernel-check" --section "$4" --filter "$5" --seed "$2" --receipt "$out/kernel-check.jsonl" > "$log" 2>&1
  echo "kernel-check $4 $5 rc=$?"; grep -E "FAIL" "$log" | head -n 5; tail -n 2 "$log"
}
planes_test() {  # tag: the CUDA-vs-CPU kv.planes test (CudaModels.KvPlanesAgainstOracle)
  timeout 120 "$bin/test_backend_cuda_gpu" --shared "$sh" --gtest_filter='*KvPlanes*' > "$out/test-$1.log" 2>&1
  echo "test_backend_cuda_gpu rc=$?"; grep -E "PASSED|FAILED|rror" "$out/test-$1.log" | head -n 8
}
planes_perf() {  # seed: kernel-check --perf of the kv.planes decode rows at 16384 keys (one and two tiles in flight)
  timeout 60 "$bin/kernel-check" --section attn --filter "i8tile/q8_0-planes/32-8x128/rows/n1@16383" --perf --reps 30 \
    --seed "$1" --receipt "$out/kernel-check-perf.jsonl" | grep -E " us|FAIL" | head -n 5
}
tg_resident() {  # depth reps limit_s arms...: tg128 of $f with one arm resident at a time, the defaults first and last
  local depth=$1 reps=$2 limit=$3 a args=(--arm configs/arm-base.toml); shift 3
  for a in "$@"; do args+=(--arm "$a"); done
  tg_on "$depth" "$reps" "$limit" "${args[@]}" --arm configs/arm-base-b.toml --set bench.interleave=false
}
pm_at() {  # depth tag: one --pm-sample pass of the gguf-synth file $f (1 us samples with the kernel records), its table
  timeout 150 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d $1 -r 2 --set receipt.hash_model=false \
    --set kernels.prefill_f16_weights=false --pm-sample "$out/pm-$2-d$1.jsonl" --pm-interval-ns 1000 \
    --receipt "$out/pp-bench-pm.jsonl" 2>&1 | grep -E "rror" | head -n 4
  [ -f "$out/pm-$2-d$1.jsonl" ] && python3 scripts/pm-timeline.py "$out/pm-$2-d$1.jsonl" | head -n 18
  [ -f "$out/pm-$2-d$1.jsonl" ] && gzip -f "$out/pm-$2-d$1.jsonl"
}
rows_8b() {  # [pm]: the README's qwen3-8b decode rows (q4_k_m tg128 at 0 / 4096 / 16384 keys, q4_0 and q8_0 at 0); pm: q4_k_m's DRAM sampled at 0 and 16384 keys too
  synth qwen3-8b q4_k_m
  tg_on 0,4096,16384 5 150
  if [ "${1:-}" = pm ]; then pm_at 0 q4_k_m; pm_at 16384 q4_k_m; fi
  rm -f "$f" "$f.done"
  local mix
  for mix in q4_0 q8_0; do synth qwen3-8b $mix; tg_on 0 5 60; rm -f "$f" "$f.done"; done
}
moe_prefill_arms() {  # pp512 of the MoE file $f: host-routed, device-grouped (dp4a), device-grouped (int8 tensor cores)
  timeout 200 "$bin/pp-bench" -m "$f" -p 512 -n 0 -d 0 -r 5 --arm configs/arm-base.toml \
    --arm configs/arm-moe-device-route-prefill.toml --arm configs/arm-moe-device-route-prefill-mma.toml \
    --set bench.interleave=false --set receipt.hash_model=false \
    --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
}
traces_at() {  # depths... [-- tag pp-bench args...]: tg128 decode timelines of the gguf-synth file $f at each depth (trace[-tag]-d<depth>.jsonl.gz)
  local depths=() d tag=""
  while (($#)) && [[ $1 != -- ]]; do depths+=("$1"); shift; done
  if (($#)); then shift; tag="-$1"; shift; fi
  for d in "${depths[@]}"; do
    timeout 120 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d $d -r 2 --set receipt.hash_model=false \
      --set kernels.prefill_f16_weights=false "$@" --trace "$out/trace$tag-d$d.jsonl" \
      --receipt "$out/pp-bench-trace.jsonl" 2>&1 | grep -E "^trace" | head -n 2
    gzip -f "$out/trace$tag-d$d.jsonl"
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
kc() {  # section filter seed limit_s [lines]: a kernel-check gate, its FAIL / ERR lines and summary
  timeout "$4" "$bin/kernel-check" --section "$1" --filter "$2" --seed "$3" --receipt "$out/kernel-check.jsonl" |
    grep -E "FAIL|ERR|kernel-check:" | tail -n "${5:-6}"
}
gpu_tests() {  # tag filter limit_s: a filtered run of the CUDA-vs-CPU tests, log test_backend_cuda_gpu-TAG.log
  timeout "$3" "$bin/test_backend_cuda_gpu" --shared "$sh" --gtest_filter="$2" > "$out/test_backend_cuda_gpu-$1.log" 2>&1
  echo "test_backend_cuda_gpu-$1 rc=$?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/test_backend_cuda_gpu-$1.log"
}
# The gates of the queued measurements (each phase below runs its own; g39a / g39b run them all
# on a card of the same architecture when no H200 is lent).
gates_s37a() {  # the whole suite at kernels.norm_defer + kernels.mmvs_row_pairs_qkv, the q/k/v row-pair gates
  suite_args=(--config configs/arm-norm-defer.toml --config configs/arm-mmvs-row-pairs-qkv.toml)
  suite_tag="-arms"
  cuda_vs_cpu "base configuration" 20
  suite_args=()
  suite_tag=""
  for flt in mmvs_rp_x3 mmvs_pair_rp; do kc mmvs_id $flt 20263700 60; done
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
  first)
    # A session's first call (~9 minutes): every kernel-check section and the CUDA-vs-CPU model
    # tests. (4180 cases did not finish in 360 s on an H100 in the fifty-first session: 480 now.)
    gpu_info
    timeout 480 "$bin/kernel-check" --section all --seed 20261208 \
      --receipt "$out/kernel-check.jsonl" | grep -v "^\[PASS" | tail -n 30
    cuda_vs_cpu "" 10
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
  s37a)
    # The next session's first call (s36e and rows37 in one, no rebuild between): the whole
    # CUDA-vs-CPU suite with its base configuration at kernels.norm_defer (up to 4096 columns) and
    # kernels.mmvs_row_pairs_qkv on, the q/k/v row-pair gates (the refusal check fixed), then the
    # README decode rows measured with both keys as the base configuration (pp-bench --config; the
    # receipts record it) and the reversed arms in the same call (A/A copy): qwen3-8b q4_k_m tg128 at
    # 0 / 4096 / 16384 keys, q4_0 and q8_0 tg128, qwen3-32b q4_k_m tg128 (its 5120-column norms stay
    # full by the width bound; the q/k/v pairs reversed). Suite and gates green: flip both defaults
    # and take the README rows from these receipts (scripts/readme-rows.py with --arm
    # configs/arm-base.toml and --baseline: the receipts behind them go to receipts/baselines/,
    # and the 30b / f16 / prefill rows stay from the old baseline file). ~9 minutes.
    # (Since the flip both keys are the defaults: the rows run at the defaults, no --config, so they
    # join the receipt sweep's default series; the suite of gates_s37a still names them explicitly.)
    gpu_info
    gates_s37a
    both=()
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
  g40)
    # A short call when little device time is left (fortieth session): the gates that decide the
    # flip of kernels.norm_defer and kernels.mmvs_row_pairs_qkv (the suite at both keys, the row-pair
    # gates: their H200 speed was measured in s36d) and the speculative decoding GPU tests; no rows.
    # Any sm_90 card. ~4 minutes.
    gpu_info
    gates_s37a
    gpu_tests spec 'CudaModels.VerifyRowsEqualDecodeSteps:CudaModels.ArgmaxRowsEqualHostArgmax:CudaModels.SpeculativeEqualsGreedy' 150
    ;;
  spec40)
    # run-spec on the CUDA backend (built in the fortieth session, no device): greedy speculative
    # decoding must not change the greedy output. On the device that rests on a verify batch's rows
    # choosing as one-token steps do (decode == verify was gated bit for bit for row 0 only:
    # CudaModels.*DecodeEqualsVerify; CudaModels.VerifyRowsEqualDecodeSteps gates every row of
    # batches of 2 / 5 / 8 at 20 and 300 keys), then --check (a plain generation, compared token for token;
    # exit 1 otherwise) on stories260K with its q8_0 / q4_0 files as drafts, on qwen3-8b q4_k_m with
    # prompt lookup at k = 4 / 8 and with itself as the draft (every proposal should be accepted);
    # then what a verify batch costs against a one-token step (pp-bench pp1 .. pp9 at 0 and 4096
    # keys), which bounds any speedup a draft can give. ~4 minutes.
    gpu_info
    gpu_tests spec 'CudaModels.VerifyRowsEqualDecodeSteps:CudaModels.ArgmaxRowsEqualHostArgmax:CudaModels.SpeculativeEqualsGreedy' 150
    sm=$sh/models
    for d in stories260K-q8_0 stories260K-q4_0; do
      timeout 60 "$bin/run-spec" "$sm/stories260K.gguf" -md "$sm/$d.gguf" -p "Once upon a time" -n 200 --draft-max 4 \
        --check --backend cuda --set kv.type_k=f32 --set kv.type_v=f32 --receipt "$out/run-spec.jsonl" 2>&1 >/dev/null |
        grep "run-spec:"
    done
    synth qwen3-8b q4_k_m
    for k in 4 8; do
      timeout 90 "$bin/run-spec" "$f" --drafter ngram -p "The quick brown fox jumps over the lazy dog." -n 256 --draft-max $k \
        --check --backend cuda --set receipt.hash_model=false --receipt "$out/run-spec.jsonl" 2>&1 >/dev/null | grep "run-spec:"
    done
    timeout 120 "$bin/run-spec" "$f" -md "$f" -p "The quick brown fox jumps over the lazy dog." -n 128 --draft-max 4 \
      --check --backend cuda --set receipt.hash_model=false --receipt "$out/run-spec.jsonl" 2>&1 >/dev/null | grep "run-spec:"
    timeout 120 "$bin/pp-bench" -m "$f" -p 1,2,3,5,9 -n 0 -d 0,4096 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    # run-gen end to end: greedy picks the argmax on the device now (Backend::argmax_rows, only the id
    # comes back); a repeat penalty of 1.0001 takes the host sampler (the logits copied every step).
    for pen in 1 1.0001; do
      timeout 60 "$bin/run-gen" "$f" -p "The quick brown fox jumps over the lazy dog." -n 256 --backend cuda \
        --set sample.repeat_penalty=$pen --set receipt.hash_model=false --receipt "$out/run-gen.jsonl" 2>&1 >/dev/null |
        grep "run-gen:"
    done
    rm -f "$f"
    ;;
  fix41)
    # The forty-first session's fixes after g39a / spec40 / g39b on an H100 (c2bd4e9..): the suite
    # at the two keys again (MmvsActIlSameBytes / MmvsRowPairsSameBytes read the "_qkv" / "_ns"
    # launch names now), the row-pair refusal check of every type (an even extra segment is a
    # supported q/k/v pair launch at cap 0: the check uses an odd one), the speculative tests at the
    # defaults (the draft primes the whole prompt, as the target does). ~3 minutes.
    gpu_info
    gates_s37a
    kc mmvs_id mmvs_rp 20264100 150
    gpu_tests spec 'CudaModels.Speculative*:CudaModels.VerifyRowsEqualDecodeSteps:CudaModels.ArgmaxRowsEqualHostArgmax' 120
    ;;
  h42)
    # An H100 when no H200 is lent (a "trace" pack: device-prepare.sh build/release ../shared trace):
    # the qwen3-8b q4_k_m rows at the current defaults with the card's own roofline fraction
    # (pp-bench's "card" figure, memory clock x bus width), the verify batch's cost from 1 to 9 and
    # 16 rows at the defaults (the pairs on, the f16 prefill copies on: where the GEMM overtakes the
    # decode kernels), and the d0 / d4096 timelines at the defaults (scripts/trace-exposed.py):
    # where the step goes since the flips. ~5 minutes.
    gpu_info
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 5 150
    timeout 150 "$bin/pp-bench" -m "$f" -p 1,2,3,4,5,6,7,8,9,16 -n 0 -d 0 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    traces_at 0 4096
    rm -f "$f"
    ;;
  h42q)
    # After h42 on an H200: the qwen3-8b q8_0 d0 timeline at the defaults (the row closest to its
    # target: 435.0 tok/s, 0.73 of the roofline, 445 needed). ~1 minute.
    synth qwen3-8b q8_0
    traces_at 0 -- q8_0
    rm -f "$f"
    ;;
  attn42)
    # Where the d0 attention's 6.35 us per layer goes (the largest small kernel of the H100 d0
    # timeline of h42: 228.5 us of a 2128 us step): ncu --set full with the SASS source counters of
    # one launch of the default d0 instance (head split, fold, P x V on tensor cores, prefetch,
    # staged K, interleaved softmax; G = 1) at 127 and 0 cached keys, and its kernel-check times.
    gpu_info
    ncu --version | tail -n 1
    timeout 60 "$bin/kernel-check" --section fused --perf --seed 20264201 --filter "attn_decode_rope/neox_norm_pv16_pre_ks_hs_si_ms96/" \
      --receipt "$out/kernel-check-perf.jsonl" | grep -E "^\[" | sed 's/norm_err.*|/|/'
    ncu_src fused "d127|\\(int\\)128, \\(int\\)1, \\(int\\)3, \\(bool\\)1, \\(bool\\)1|neox_norm_pv16_pre_ks_hs_si_ms96/q8_0-q5_1/32-8x128/n1@127/" \
      "d0|\\(int\\)128, \\(int\\)1, \\(int\\)3, \\(bool\\)1, \\(bool\\)1|neox_norm_pv16_pre_ks_hs_si_ms96/q8_0-q5_1/32-8x128/n1@0/"
    ;;
  md41)
    # moe-devq8-check (built in the forty-first session, no device): the device-routed MoE expert
    # matvecs in every form (routed, routed_v2, grouped, grouped_mma) on the Qwen3-30B-A3B expert
    # shapes at 1 / 4 / 8 / 32 / 512 tokens, Q8_0 / Q6_K / Q4_K / Q4_0: each form byte-identical to
    # plain per-slot launches (grouped_mma within 1e-5), the plain launches against f64, and the
    # times beside llama.cpp's MUL_MAT_ID figures of the same shape (anchors). Exit 1 on a failed
    # gate. Then two other models' expert shapes. ~4 minutes.
    gpu_info
    timeout 400 "$bin/moe-devq8-check" --anchors "$sh/anchors/llamacpp-h200.md" --receipt "$out/moe-devq8-check.jsonl" 2>&1 |
      grep -v "info\]"
    echo "moe-devq8-check rc=${PIPESTATUS[0]}"
    # Other expert shapes (no anchors): 256 experts of 512 x 2048, 8 used (the Qwen3.5-A3B layout) and
    # 32 of 2880 x 2880, 4 used (gpt-oss-20b's; it ships MXFP4 experts, Q8_0 / Q4_0 here).
    timeout 200 "$bin/moe-devq8-check" --experts 256 --ff 512 --types Q8_0,Q4_K --tokens 1,8,32,512 \
      --receipt "$out/moe-devq8-check.jsonl" 2>&1 | grep -v "info\]" | tail -n 12
    timeout 200 "$bin/moe-devq8-check" --experts 32 --used 4 --embd 2880 --ff 2880 --types Q8_0,Q4_0 --tokens 1,8,32,512 \
      --receipt "$out/moe-devq8-check.jsonl" 2>&1 | grep -v "info\]" | tail -n 12
    ;;
  pm52)
    # pp-bench --pm-sample (built in the fifty-first session, not yet run): DRAM throughput and bytes read
    # sampled by CUPTI's PM sampling every 2 us and then every 1 us over 8 decode steps of qwen3-8b
    # q4_k_m at 0 keys, with the same pass's kernel records where CUPTI allows both
    # (scripts/pm-timeline.py: the DRAM's activity under each launch's exposed time, the share of the
    # step it idles). If it fails, the error names the CUPTI call; the libnvperf libraries come with
    # a "trace" pack. ~3 minutes, any sm_90 card (an H200 preferred: its rows are the targets).
    gpu_info
    synth qwen3-8b q4_k_m
    # (2000 ns with the kernel records, the same without them in case the two CUPTI APIs clash, 1000 ns)
    for v in 2000: 2000:--pm-no-trace 1000:; do
      ns=${v%%:*}; extra=${v#*:}; tag=$ns${extra:+-notrace}
      timeout 150 "$bin/pp-bench" -m "$f" -p 0 -n 128 -d 0 -r 2 --set receipt.hash_model=false \
        --set kernels.prefill_f16_weights=false --pm-sample "$out/pm-$tag-d0.jsonl" --pm-interval-ns $ns $extra \
        --receipt "$out/pp-bench-pm.jsonl" 2>&1 | grep -E "^pm |rror" | head -n 8
      [ -f "$out/pm-$tag-d0.jsonl" ] && python3 scripts/pm-timeline.py "$out/pm-$tag-d0.jsonl" | head -n 16
      [ -f "$out/pm-$tag-d0.jsonl" ] && gzip -f "$out/pm-$tag-d0.jsonl"
    done
    rm -f "$f" "$f.done"
    ;;
  s52)
    # The CUDA-vs-CPU suite at kernels.attn_grid_round 8 (the default since the fifty-second session: every
    # model test's decode attention trimmed), then kernel-check's attn section and the fused attention
    # cases. Any sm_90 card. ~5 minutes.
    gpu_info
    cuda_vs_cpu "" 12
    kc attn "" 20265203 200
    kc fused attn_decode_rope 20265204 150
    ;;
  gt52)
    # kernels.attn_grid_round (built in the fifty-second session): the decode attention's grid trimmed to
    # the splits its row uses. Gates: kernel-check attn grid_trim_vs_full/* and fused attn_decode_rope
    # *_grid* (bytes against the full grid / the unfolded path), CudaModels.AttnGridTrimSameBytes. Rows:
    # qwen3-8b q4_k_m tg128 at 0 / 1024 / 4096 / 16384 keys in one invocation (a 16512-row cache for
    # every row, as a long configured context gives: 66 splits whatever the row uses), rounds 1 and 8
    # against the full grid, interleaved with an A/A copy. Any sm_90 card. ~5 minutes.
    gpu_info
    kc attn grid_trim 20265201 120
    kc fused _grid 20265202 120
    gpu_tests gt52 'CudaModels.AttnGridTrimSameBytes:CudaModels.AttnHeadSplitSameBytes:CudaModels.AttnOneSplitNoCombineSameBytes' 200
    synth qwen3-8b q4_k_m
    # (ran at 1068cd6 with arm files for rounds 1 and 8, removed when 8 became the default; git show 1068cd6)
    tg_on 0,1024,4096,16384 5 300 --arm configs/arm-attn-grid-round-0.toml --arm configs/arm-base.toml
    rm -f "$f" "$f.done"
    ;;
  gt52b)
    # gt52's rows again with more repetitions where the trimmed grid changes launches (0 / 1024 / 4096
    # keys; at 16384 every split is used: the same launches), so that the default is decided on more
    # than one call's spread. Any sm_90 card. ~3 minutes.
    gpu_info
    synth qwen3-8b q4_k_m
    tg_on 0,1024,4096 8 300 --arm configs/arm-attn-grid-round-0.toml --arm configs/arm-base.toml
    rm -f "$f" "$f.done"
    ;;
  s53)
    # The suite at the fifty-third session's defaults (kernels.norm_defer_max_cols = 0,
    # kernels.mmvs_emit_norm_warps_wide = 8) and the embedding gate. Any sm_90 card, a "slim" pack. ~1 minute.
    gpu_info
    cuda_vs_cpu "" 10
    kc quant embed/ 20265304 60
    ;;
  ew53)
    # kernels.mmvs_emit_norm_warps_wide (built in the fifty-third session): qwen3-32b's norms taken by its
    # o and down launches in 8-warp CTAs, two per SM (160 CTAs in one wave), with the deferred norm at every
    # width; and the GLU emit on its 5120-weight gate/up rows (no GLU pairs: no quantize launch). Gates
    # first (kernel-check mmvs_emit_norm/* at the new 8-warp register cap; the wide-model GPU test), then
    # qwen3-32b q4_k_m tg128 at 0 keys, one arm resident at a time, the defaults first and last. Any sm_90
    # card, a "slim" pack. ~8 minutes.
    gpu_info
    kc mmvs_id mmvs_emit_norm 20265300 150
    kc mmvs_id mmvs_glu_emit 20265301 150
    kc quant embed/ 20265302 60  # the embedding gather in 4 threads per chunk (first gated this session)
    timeout 60 "$bin/kernel-check" --section quant --filter embed/ --perf --reps 50 --seed 20265303 \
      --receipt "$out/kernel-check.jsonl" | grep -E "embed/(Q4_K|Q6_K|Q8_0|Q4_0)/1x4096" | head -n 8
    gpu_tests ew53 "CudaModels.EmitNorm*" 150
    synth qwen3-32b q4_k_m 200
    tg_resident 0 5 400 configs/arm-emit-norm-wide-w8.toml configs/arm-glu-emit-wide.toml configs/arm-emit-wide-both.toml
    rm -f "$f" "$f.done"
    ;;
  ew53b)
    # ew53's winning arm (the wide emit, 1.035x on qwen3-32b q4_k_m) on the 32B's q4_0 mix: tg128 at 0 keys,
    # one arm resident at a time, the defaults first and last. Any sm_90 card, a "slim" pack. ~4 minutes.
    gpu_info
    synth qwen3-32b q4_0 200
    tg_resident 0 5 300 configs/arm-emit-norm-wide-w8.toml
    rm -f "$f" "$f.done"
    ;;
  ew53c)
    # ew53's arm on qwen3-8b q4_k_m tg128 at 0 keys (4096-wide rows: neither key should change a launch),
    # interleaved with an A/A copy. Any sm_90 card, a "slim" pack. ~3 minutes.
    gpu_info
    synth qwen3-8b q4_k_m
    tg_on 0 5 200 --arm configs/arm-base.toml --arm configs/arm-emit-norm-wide-w8.toml
    rm -f "$f" "$f.done"
    ;;
  h53)
    # On an H200 only: the qwen3-32b q4_k_m README decode row at the fifty-third session's defaults (its norms
    # taken by its o / down launches: ew53's 1.035x on an H100), one arm resident at a time beside the
    # reversed arm (configs/arm-emit-norm-wide-off.toml), the defaults first and last. A "dense" (or "slim") pack. ~5 minutes.
    gpu_info
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "h53: not an H200, no rows"; exit 0; }
    synth qwen3-32b q4_k_m 300
    tg_resident 0 5 300 configs/arm-emit-norm-wide-off.toml
    rm -f "$f" "$f.done"
    ;;
  x55)
    # Does q4_0's layout help IQ4_XS (its 8-warp GLU has no spill; its both-groups o form 40 bytes)? qwen3-8b
    # iq4_xs tg128 at 0 keys: the emitting GLU at 16 warps, at 8, and with the 8-warp o projection, against the
    # defaults (no emit for IQ4_XS), interleaved with an A/A copy. Any sm_90 card, a "slim" pack. ~2 minutes.
    gpu_info
    synth qwen3-8b iq4_xs
    tg_on 0 3 120 --arm configs/arm-base.toml --arm configs/arm-iq4xs-glu-emit.toml --arm configs/arm-iq4xs-glu-emit-w8.toml \
      --arm configs/arm-iq4xs-w8.toml
    rm -f "$f" "$f.done"
    ;;
  s56)
    # The fifty-sixth session's first call: on an H200 the README's 8B decode rows at the defaults (r55h);
    # on any card kernel-check --perf of the emitting GLU and the residual matvec (frac_of_card_bw, added in
    # the fifty-fifth session, recorded first in st56). A "dense" pack. ~1 minute (~5 on an H200).
    gpu_info
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then rows_8b; exit 0; fi
    timeout 120 "$bin/kernel-check" --section mmvs_id --filter "mmvs_glu_emit/" --perf --reps 30 --seed 20265601 \
      --receipt "$out/kernel-check.jsonl" | grep -E "12288x4096" | head -n 12
    ;;
  iq57)
    # The IQ4_XS sign-mode permute lookup (wq::iq4_dot8, no key; bench/notes/mmvs-iq4-prmt.md): its gates
    # (the exhaustive device identity, every IQ4_XS mmvs case against the f64 reference and the byte
    # identities, the CUDA-vs-oracle test); then, where the build before it is in .device/old (a second
    # call on the same warm machine carrying only the old build, as hn50), kernel times of the IQ4_XS
    # GLU, the down shape and the emitting GLU in both builds, and qwen3-8b iq4_xs tg128 at 0 keys, the
    # builds' processes alternating, each twice (the second run of each is its A/A). Any sm_90 card. ~3 minutes.
    gpu_info
    "$bin/pp-bench" --version
    for c in "quant iq4_dot8/" "mmvs /IQ4_XS/" "mmvs_id /IQ4_XS/"; do
      timeout 120 "$bin/kernel-check" --section ${c%% *} --filter "${c#* }" --seed 20265701 --receipt "$out/kernel-check.jsonl" \
        > "$out/kc-iq57-${c%% *}.log" 2>&1
      echo "kernel-check ${c} rc=$?"; grep -E "FAIL" "$out/kc-iq57-${c%% *}.log" | head -n 5; tail -n 2 "$out/kc-iq57-${c%% *}.log"
    done
    timeout 150 "$bin/test_backend_cuda_gpu" --shared "$sh" --gtest_filter='*Iq4*:*IQ4*' > "$out/test-iq57.log" 2>&1
    echo "test_backend_cuda_gpu rc=$?"; grep -E "PASSED|FAILED|SKIPPED" "$out/test-iq57.log" | head -n 6
    [ -x .device/old/bin/pp-bench ] || { echo "iq57: no .device/old, no timings"; exit 0; }
    .device/old/bin/pp-bench --version
    for b in "$bin" .device/old/bin "$bin" .device/old/bin; do
      for c in "mmvs mmvs_ail_glu_cap5/IQ4_XS/12288x4096/m1" "mmvs mmvs_ail_cap6/IQ4_XS/4096x12288/m1" \
               "mmvs_id mmvs_glu_emit/IQ4_XS/12288x4096/silu/ns" "mmvs mmvs/IQ4_XS/4096x4096/m1"; do
        timeout 90 "$b/kernel-check" --section ${c%% *} --filter "${c#* }" --perf --reps 50 | grep -E " us|FAIL" | tail -n 1 | sed "s|^|$b |"
      done
    done
    synth qwen3-8b iq4_xs
    for b in "$bin" .device/old/bin "$bin" .device/old/bin; do
      timeout 100 "$b/pp-bench" -m "$f" -p 0 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
        --set kernels.prefill_f16_weights=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp" | sed "s|^|$b |"
    done
    rm -f "$f" "$f.done"
    ;;
  g57)
    # After iq57 (IQ4_XS's permute lookup: every IQ4_XS instance lost registers, the 8-warp emit its spill):
    # does IQ4_XS's one-token GLU still want one task per matrix in flight (kernels.mmvs_glu_one_task, chosen
    # in the forty-fourth session at the old register counts)? qwen3-8b iq4_xs tg128 at 0 and 4096 keys, the
    # defaults against the two-task GLU (configs/arm-mmvs-q5k-iq4xs-two-task.toml), interleaved with an A/A
    # copy. Any sm_90 card. A "dense" pack. ~3 minutes.
    gpu_info
    synth qwen3-8b iq4_xs
    tg_on 0,4096 3 200 --arm configs/arm-base.toml --arm configs/arm-mmvs-q5k-iq4xs-two-task.toml
    rm -f "$f" "$f.done"
    ;;
  kvp59t)
    # kvp59 at its shortest (~2.5 minutes, for the last device time of a session): the fold and decode-route
    # gates of the planes (kernel-check fused planes, attn .../rows/ and the prefill over planes), then qwen3-8b
    # q4_k_m tg128 at 16384 keys, the defaults against the planes, interleaved with an A/A copy. Any sm_90 card.
    gpu_info
    k=0
    for c in "fused planes" "attn i8tile/q8_0-planes/32-8x128/rows/" "attn q8_0-q8_0/planes/"; do
      k=$((k + 1))
      timeout 60 "$bin/kernel-check" --section ${c%% *} --filter "${c#* }" --seed 20265904 --receipt "$out/kernel-check.jsonl" \
        > "$out/kc-kvp59t-$k.log" 2>&1
      echo "kernel-check ${c} rc=$?"; grep -E "FAIL" "$out/kc-kvp59t-$k.log" | head -n 5; tail -n 1 "$out/kc-kvp59t-$k.log"
    done
    synth qwen3-8b q4_k_m
    tg_on 16384 3 100 --arm configs/arm-base.toml --arm configs/arm-kv-planes.toml
    rm -f "$f" "$f.done"
    ;;
  kvp59s)
    # kvp59 cut for a short call (~3 minutes): the planes gates of kernel-check (attn and fused, the decode route
    # and the fold), then qwen3-8b q4_k_m tg128 at 0 and 16384 keys, the defaults against the planes (fold on),
    # interleaved with an A/A copy. Any sm_90 card, a "dense" pack.
    gpu_info
    for sec in fused attn; do kc_gate kvp59s 20265903 90 $sec planes; done
    synth qwen3-8b q4_k_m
    tg_on 0,16384 3 200 --arm configs/arm-base.toml --arm configs/arm-kv-planes.toml
    rm -f "$f" "$f.done"
    ;;
  kvp61h)
    # The int8 tile form's head split (one block per query head while a row has at most
    # kernels.attn_head_split_keys keys, blocks of 2 to kernels.attn_head_pair_keys, as the default kernels;
    # the sixty-first session): its gates
    # (kernel-check fused planes: every fold case, the _hs / _hs2 ones against the group's unfolded launches' bytes;
    # the GPU test, whose decode steps now take it; the attn i8tile and f16mma gates: the tile loop's copies
    # and the online softmax's rescale skip changed after kvp61; their kernel times at 16384 keys against
    # kvp60c's / i858's) and qwen3-8b q4_k_m tg128 at 0 / 1024 / 4096 / 16384 keys,
    # the defaults against the planes (kvp61: 0.971x / - / 1.032x / 1.034x before it) and the planes without
    # the pairs (arm-kv-planes-nopair), then pp512 / pp2048 of both. Any sm_90 card, a "dense" pack. ~6 minutes
    # (kvp61ht: the 0-key row, ~2.5).
    gpu_info
    kc_gate kvp61h 20266103 90 fused planes
    kc_gate kvp61h 20266103 90 attn i8tile
    kc_gate kvp61h 20266103 90 attn f16mma
    planes_test kvp61h
    timeout 90 "$bin/kernel-check" --section attn --filter "n1@16383" --perf --reps 30 --seed 20266104 \
      --receipt "$out/kernel-check-perf.jsonl" | grep -E "i8tile|f16mma" | grep -E " us|FAIL" | sed 's/bytes: .*|/|/; s/norm_err.*|/|/' | head -n 10
    synth qwen3-8b q4_k_m
    tg_on 0,1024,4096,16384 3 240 --arm configs/arm-base.toml --arm configs/arm-kv-planes.toml --arm configs/arm-kv-planes-nopair.toml
    # The prefill over the planes (a default flip must keep the prefill rows): pp512 and pp2048 at 0 keys.
    timeout 120 "$bin/pp-bench" -m "$f" -p 512,2048 -n 0 -d 0 -r 3 --arm configs/arm-base.toml --arm configs/arm-kv-planes.toml \
      --set bench.aa_copy=true --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f" "$f.done"
    ;;
  s63)
    # The int8 tile form's quant tiles by the copy engine (kernels.attn_planes_copy, sixty-third session; async by
    # default). Ran at 44f6ec7 on an H100 with a second form (bulk copies per key row, since removed) beside
    # tensor, its fused filters then matching nothing (s63f ran them); as it stands: the tensor form's gates
    # (kernel-check attn .../tensor rows: the bytes of the cp.async form and the reference's tolerance; fused
    # _tensor_ folds: the bytes of the unfolded launches; the GPU test's tensor check), the whole CUDA-vs-CPU
    # suite at the defaults, kernel-check --perf of the planes rows at 16384 keys (cp.async, two stages,
    # tensor), qwen3-8b q4_k_m tg128 at 0 / 4096 / 16384 keys, the defaults against the tensor arm,
    # interleaved with an A/A copy. Any sm_90 card, a "dense" pack. ~7 minutes.
    gpu_info
    kc_gate s63t 20266301 90 attn /tensor
    kc_gate s63t 20266301 120 fused _tensor_
    planes_test s63
    planes_perf 20266302
    cuda_vs_cpu
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 3 240 --arm configs/arm-base.toml --arm configs/arm-kv-planes-tensor.toml
    rm -f "$f" "$f.done"
    ;;
  g63)
    # After the bulk-row form's removal (the tile kernel's instances and layout back to async + tensor): every
    # int8 tile gate (kernel-check attn i8tile: dense, head-major, rows, pd2, tensor; fused planes folds: async,
    # pd2, tensor) and CudaModels.KvPlanesAgainstOracle. Any sm_90 card, a "dense" pack. ~3 minutes.
    gpu_info
    kc_gate g63 20266307 120 attn i8tile
    kc_gate g63 20266307 200 fused planes
    planes_test g63
    ;;
  bps63)
    # The tile form's split count at depth (kernels.attn_blocks_per_sm, tuned at 4 before kv.planes): kernel-check
    # --perf of the dense-plane tile form at 16384 keys with ~33 / ~50 / 66 / 64 / ~128 splits, then qwen3-8b
    # q4_k_m tg128 at 4096 / 16384 keys, the defaults against 2 and 3 blocks per SM, interleaved with an A/A
    # copy; then the speculative CUDA-vs-CPU tests. Any sm_90 card, a "dense" pack. ~4 minutes.
    gpu_info
    timeout 100 "$bin/kernel-check" --section attn --filter "attn_decode_i8tile/q8_0-planes/32-8x128/n1@16383" --perf --reps 30 \
      --seed 20266304 --receipt "$out/kernel-check-perf.jsonl" | grep -E " us|FAIL" | sed 's/bytes: .*|/|/' | head -n 8
    synth qwen3-8b q4_k_m
    tg_on 4096,16384 3 200 --arm configs/arm-base.toml --arm configs/arm-attn-bps2.toml --arm configs/arm-attn-bps3.toml
    rm -f "$f" "$f.done"
    gpu_tests spec 'CudaModels.Speculative*' 100
    ;;
  hd71)
    # On an H200 only: defaults that H100 runs decided, where the H200's higher bytes per clock could flip them:
    # qwen3-8b q4_k_m tg128 at 4096 / 16384 keys against two tiles in flight per warp in the planes attention
    # (configs/arm-kv-planes-pd2.toml; 1.001x at 16384 on an H100, kvp60c) and 3 blocks per SM (arm-attn-bps3.toml;
    # 1.009x / 0.995x on an H100, bps63), then at 0 keys the 8-warp o projection and GLU for Q4_K
    # (arm-emit-w8-q4k.toml; 0.894x on an H100, ov54d). Interleaved, A/A copy. A "dense" pack. ~5 minutes.
    gpu_info
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "hd71: not an H200, nothing run"; exit 0; }
    synth qwen3-8b q4_k_m
    tg_on 4096,16384 5 240 --arm configs/arm-base.toml --arm configs/arm-kv-planes-pd2.toml --arm configs/arm-attn-bps3.toml
    tg_on 0 5 90 --arm configs/arm-base.toml --arm configs/arm-emit-w8-q4k.toml
    rm -f "$f" "$f.done"
    ;;
  kc71)
    # kernel-check at the defaults on any sm_90 card, section by section (each its own receipt line, so a cut
    # loses one section, not the sweep): the sections s70's time-cut sweep did not reach (it passed act, attn,
    # attn_naive and most of fused), small ones first, the default decode path's mmvs_id gates, fused, mmvs. ~7-10 minutes.
    gpu_info
    for sec in quant norm rope kv sample ssm gemm gemm_id matvec matvec_v2 matvec_v2_id matvec_rp mmvf moe; do
      kc "$sec" "" 20261208 60 3
    done
    for flt in mmvs_emit_norm mmvs_glu_emit mmvs_rp_x3 mmvs_pair_rq mmvs_rq_x3 mmvs_norm_ss_qkv mmvs_glu1t mmvs_norm_ss_m3; do
      kc mmvs_id "$flt" 20261208 60 3
    done
    kc fused "" 20261208 120 3
    kc mmvs "" 20261208 150 3
    ;;
  rows70q)
    # The README's two headline decode rows only, for a call with too little device time left for rows64: on an H200,
    # qwen3-8b q4_k_m and q4_0 tg128 at 0 keys at the defaults, five reps each; elsewhere nothing. ~2 minutes.
    gpu_info
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "rows70q: not an H200, nothing run"; exit 0; }
    for mix in q4_k_m q4_0; do synth qwen3-8b $mix; tg_on 0 5 60; rm -f "$f" "$f.done"; done
    ;;
  rows64)
    # r63's README decode rows on an H200 only (elsewhere nothing: the call only asks for a card): qwen3-8b q4_k_m
    # tg128 at 0 / 4096 / 16384 keys, q4_0 and q8_0 at 0, qwen3-32b q4_k_m at 0, at the defaults (kv.planes = auto).
    # A "dense" pack. ~8 minutes on an H200.
    gpu_info
    # "any" as the third argument: run on whatever card came (the rows at HEAD on an H100 for the notes; not the README's).
    [ "${3:-}" = any ] || nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 ||
      { echo "rows64: not an H200, nothing run"; exit 0; }
    rows_8b
    synth qwen3-32b q4_k_m 200
    tg_on 0 5 120
    rm -f "$f" "$f.done"
    ;;
  r63)
    # The speculative CUDA-vs-CPU tests at the defaults (s63m's pack lacked their qwen3 file), then on an H200
    # only the README decode rows at the sixty-second session's defaults (kv.planes = auto): qwen3-8b q4_k_m
    # tg128 at 0 / 4096 / 16384 keys, q4_0 and q8_0 at 0, qwen3-32b q4_k_m at 0. A "dense" or "moe" pack. ~8 minutes.
    gpu_info
    gpu_tests spec 'CudaModels.Speculative*' 100
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "r63: not an H200, no rows"; exit 0; }
    rows_8b
    synth qwen3-32b q4_k_m 200
    tg_on 0 5 120
    rm -f "$f" "$f.done"
    ;;
  s63m)
    # After s63 (the suite at kv.planes = auto green on a "dense" pack but for the tests of the models it leaves
    # out): the qwen35 / qwen3moe / speculative CUDA-vs-CPU tests at the defaults, then qwen3-30b-a3b q4_k_m
    # tg128 at 0 / 4096 / 16384 keys (its group of 8 at head dim 128 takes the planes under auto since the
    # sixty-second session, unmeasured), the defaults against the reversed arm (configs/arm-kv-planes-off.toml)
    # with an A/A copy. Any sm_90 card, a "moe" pack ("slim" is over the carry limit). ~6 minutes.
    gpu_info
    gpu_tests moe 'CudaModels.Qwen35*:CudaModels.Qwen3Moe*:CudaModels.Speculative*' 150
    synth qwen3-30b-a3b q4_k_m 200
    tg_on 0,4096,16384 3 300 --arm configs/arm-base.toml --arm configs/arm-kv-planes-off.toml
    rm -f "$f" "$f.done"
    ;;
  flip62)
    # kv.planes = auto, the default since the sixty-second session (the split planes wherever the int8 tile form
    # takes every attention layer): the whole CUDA-vs-CPU suite at the new defaults, then qwen3-8b q4_k_m tg128 at
    # 0 / 16384 keys, the defaults against the reversed arm (configs/arm-kv-planes-off.toml); on an H200 the
    # README's 8B decode rows instead of the arms. Any sm_90 card, a "dense" pack. ~5 minutes (~8 on an H200).
    gpu_info
    cuda_vs_cpu
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then rows_8b; exit 0; fi
    synth qwen3-8b q4_k_m
    tg_on 0,16384 3 150 --arm configs/arm-base.toml --arm configs/arm-kv-planes-off.toml
    rm -f "$f" "$f.done"
    ;;
  flip62s)
    # flip62 cut to the budget's end (~4.5 minutes): the suite, then on an H200 qwen3-8b q4_k_m tg128 at 0 / 4096 /
    # 16384 keys at the new defaults (three repetitions), elsewhere the arms of flip62.
    gpu_info
    cuda_vs_cpu
    synth qwen3-8b q4_k_m
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then tg_on 0,4096,16384 3 150
    else tg_on 0,16384 3 150 --arm configs/arm-base.toml --arm configs/arm-kv-planes-off.toml; fi
    rm -f "$f" "$f.done"
    ;;
  suite62)
    # The whole CUDA-vs-CPU suite at the sixty-second session's defaults (kv.planes = auto), alone: the last
    # device minutes of that session. Any sm_90 card, a "dense" pack. ~2.5 minutes.
    gpu_info
    cuda_vs_cpu
    ;;
  k32)
    # After kvp61h (the head split in the tile form): qwen3-32b q4_k_m tg128 at 0 and 16384 keys, the defaults
    # against the planes with and without the pairs, one arm resident at a time (the interleaved arms OOM on
    # an H100). Run in the sixty-second session as an inline edit of this file on the machine; recorded here.
    # Any sm_90 card, a "dense" pack. ~5 minutes (the synth file ~100 s).
    gpu_info
    synth qwen3-32b q4_k_m
    tg_resident 0,16384 3 420 configs/arm-kv-planes.toml configs/arm-kv-planes-nopair.toml
    rm -f "$f" "$f.done"
    ;;
  kvp61ht)
    gpu_info
    kc_gate kvp61h 20266103 90 fused planes
    kc_gate kvp61h 20266103 90 attn i8tile
    kc_gate kvp61h 20266103 90 attn f16mma
    planes_test kvp61h
    synth qwen3-8b q4_k_m
    tg_on 0 3 100 --arm configs/arm-base.toml --arm configs/arm-kv-planes.toml
    rm -f "$f" "$f.done"
    ;;
  kvp61)
    # After kvp60c (H100: every planes gate green; tg128 1.045x at 16384 keys, 0.971x at 0, two stages no
    # better): the fold block's tiles skip the new key's row in their copies and take it from shared memory
    # (patch_row; every tile requested before the wait). Its gates (kernel-check fused planes: the fold's
    # bytes against the unfolded launches, one and two stages; the GPU test), kernel-check --perf of the
    # decode attention at 128 keys (the default fold over q8_0 / q5_1 blocks against the planes' fold),
    # qwen3-8b q4_k_m tg128 at 0 / 4096 / 16384 keys (defaults, planes, planes without the fold: that
    # kernel unchanged), then kvp60's 32B rows one arm resident at a time (interleaved arms ran out of the
    # H100's memory). Any sm_90 card, a "dense" pack. ~9 minutes (the 32B last).
    gpu_info
    kc_gate kvp61 20266101 120 fused planes
    planes_test kvp61
    timeout 90 "$bin/kernel-check" --section fused --filter "32-8x128/n1@128/" --perf --reps 30 --seed 20266102 \
      --receipt "$out/kernel-check-perf.jsonl" | grep -E " us|FAIL" | sed 's/bytes: .*|/|/' | head -n 8
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 3 240 --arm configs/arm-base.toml --arm configs/arm-kv-planes.toml --arm configs/arm-kv-planes-nofold.toml
    rm -f "$f" "$f.done"
    synth qwen3-32b q4_k_m 300
    tg_resident 0,16384 3 300 configs/arm-kv-planes.toml
    rm -f "$f" "$f.done"
    ;;
  kvp60)
    # kv.planes at qwen3-32b's group (8 query heads per kv head, sixtieth session: the tile form's <8, RF>
    # instances): the G = 8 gates (kernel-check attn rows and prefill over planes at 64-8x128, the fused fold
    # cases q8_0-q8_0-planes/64-8x128, the GPU test with qwen3-32b-tiny), then qwen3-32b q4_k_m tg128 at 0 and
    # 16384 keys, the defaults against the planes, interleaved with an A/A copy. Any sm_90 card, a "dense"
    # pack. ~6 minutes (the 32B file ~100 s of it).
    gpu_info
    kc_gate kvp60 20266001 90 attn planes/64-8x128
    kc_gate kvp60 20266001 90 fused q8_0-q8_0-planes/64-8x128
    planes_test kvp60
    synth qwen3-32b q4_k_m 300
    tg_on 0,16384 3 240 --arm configs/arm-base.toml --arm configs/arm-kv-planes.toml
    rm -f "$f" "$f.done"
    ;;
  kvp60t)
    # kvp60c for the last minutes of a session (~3 minutes): the fused and attn planes gates (G = 4 and 8, one and
    # two stages), then qwen3-8b q4_k_m tg128 at 0 and 16384 keys: the defaults, the planes, the planes with two
    # stages, interleaved with an A/A copy. Any sm_90 card, a "dense" pack.
    gpu_info
    for sec in fused attn; do kc_gate kvp60t 20266006 60 $sec planes; done
    synth qwen3-8b q4_k_m
    tg_on 0,16384 3 150 --arm configs/arm-base.toml --arm configs/arm-kv-planes.toml --arm configs/arm-kv-planes-pd2.toml
    rm -f "$f" "$f.done"
    ;;
  kvp60c)
    # kvp59 + kvp60b at their shortest for one call (~5 minutes): every planes gate (kernel-check kv / fused /
    # attn "planes": G = 4 and 8, one and two tiles in flight), the GPU test, kernel-check --perf of the rows at
    # 16384 keys (one and two stages), then qwen3-8b q4_k_m tg128 at 0 and 16384 keys: the defaults, the planes
    # and the planes with two stages, interleaved with an A/A copy. Any sm_90 card, a "dense" pack.
    gpu_info
    for sec in kv fused attn; do kc_gate kvp60c 20266004 120 $sec planes; done
    planes_test kvp60c
    planes_perf 20266005
    synth qwen3-8b q4_k_m
    tg_on 0,16384 3 200 --arm configs/arm-base.toml --arm configs/arm-kv-planes.toml --arm configs/arm-kv-planes-pd2.toml
    rm -f "$f" "$f.done"
    ;;
  kvp60b)
    # Two tiles in flight per warp in the int8 tile form (kernels.attn_planes_stages = 2, sixtieth session): its
    # gates (kernel-check attn .../pd2 rows: the bytes of one tile in flight and the reference's tolerance; fused
    # _pd2 folds: the bytes of the unfolded launches; the GPU test's pd2 checks), kernel times of the tile form
    # at 16384 keys with one and two tiles in flight, then qwen3-8b q4_k_m tg128 at 4096 and 16384 keys: the
    # planes with one against two, interleaved with an A/A copy. Any sm_90 card, a "dense" pack. ~4 minutes.
    gpu_info
    kc_gate kvp60b 20266002 90 attn /pd2
    kc_gate kvp60b 20266002 90 fused _pd2/
    planes_test kvp60b
    planes_perf 20266003
    planes_perf 20266003
    synth qwen3-8b q4_k_m
    tg_on 4096,16384 3 200 --arm configs/arm-kv-planes.toml --arm configs/arm-kv-planes-pd2.toml
    rm -f "$f" "$f.done"
    ;;
  kvp59)
    # The split-plane q8_0 KV cache in the engine (kv.planes, fifty-ninth session; bench/notes/attn-i8-tile.md):
    # its gates (kernel-check kv / fused / attn planes cases: appends and reads byte for byte the CPU's q8_0
    # reordered, the prefill kernels over planes the bytes of the same kernels over blocks, the decode route
    # over cache rows within tolerance of the f64 reference and the bytes of the dense-plane probe with the
    # engine's switches and q8s emission; the tile form's fold of the q/k norm + RoPE + append the bytes of the
    # unfolded launches; the CUDA-vs-CPU test CudaModels.KvPlanesAgainstOracle), then qwen3-8b q4_k_m tg128 at
    # 0 / 4096 / 16384 keys: the defaults, the planes (configs/arm-kv-planes.toml, the fold on) and the planes
    # without the fold (configs/arm-kv-planes-nofold.toml) interleaved with an A/A copy (configs/arm-kv-q8v.toml,
    # V q8_0 in blocks, waits for a later call). Any sm_90 card, a "dense" pack. ~8 minutes.
    gpu_info
    for sec in kv fused attn; do kc_gate kvp59 20265901 150 $sec planes; done
    planes_test kvp59
    planes_perf 20265902
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 3 330 --arm configs/arm-base.toml --arm configs/arm-kv-planes.toml --arm configs/arm-kv-planes-nofold.toml
    rm -f "$f" "$f.done"
    ;;
  i858c)
    # i858b cut to a short call (~3 minutes): the probe's times at 16384 keys (64 / 66 / ~128 splits) and at 4096
    # beside the head-split fold form there, then ncu of one launch of the probe. Any sm_90 card, a "dense" pack.
    gpu_info
    timeout 100 "$bin/kernel-check" --section attn --filter "attn_decode_i8tile/q8_0-planes/32-8x128/n1@" --perf --reps 30 \
      --seed 20265807 --receipt "$out/kernel-check-perf.jsonl" | grep -E "@16383|@4096" | head -n 8
    timeout 60 "$bin/kernel-check" --section fused --filter "neox_norm_pv16_pre_ks_hs_ms96/q8_0-q5_1/32-8x128/n1@4096" --perf \
      --reps 30 --seed 20265808 --receipt "$out/kernel-check-perf.jsonl" | grep -E "us|FAIL" | head -n 4
    ncu_src attn "i8|attn_decode_i8_tile_kernel|attn_decode_i8tile/q8_0-planes/32-8x128/n1@16383/max_splits96"
    ;;
  i858b)
    # After i858 (the probe 0.71-0.74x the default depth kernel's time on an H100): its 8-blocks-per-SM split count
    # (two waves) beside the one-wave forms, then ncu (--set full, SASS source counters) of one launch of the probe
    # and of the default depth kernel at the same shape: where the probe's time goes. Any sm_90 card, a "dense" pack.
    # ~4 minutes.
    gpu_info
    timeout 120 "$bin/kernel-check" --section attn --filter "attn_decode_i8tile/q8_0-planes/32-8x128/n1@16383" --perf --reps 50 \
      --seed 20265806 --receipt "$out/kernel-check-perf.jsonl" | grep -E "us|FAIL" | head -n 8
    ncu_src attn "i8|attn_decode_i8_tile_kernel|attn_decode_i8tile/q8_0-planes/32-8x128/n1@16383/max_splits96"
    mv "$out/ncu.tar.gz" "$out/ncu-i8.tar.gz"
    ncu_src fused "dflt|attn_decode_gqa_kernel|neox_norm_pv16_pre_ks_si_ms96/q8_0-q5_1/32-8x128/n1@16512"
    ;;
  i858)
    # The split-plane int8 decode attention probe (kernels/attn/attn_decode_i8.cu, bench/notes/attn-i8-tile.md):
    # its gates (kernel-check attn_decode_i8tile/*, against the f64 reference with the naive twin), then --perf at
    # 16384 keys (32 / 8 heads) beside the default depth kernel (the fold's staged form, 16512 keys), the q8_0 / q5_1
    # split kernel without the fold and the f16 tile form at the same shape. Any sm_90 card, a "dense" pack. ~2 minutes.
    gpu_info
    timeout 240 "$bin/kernel-check" --section attn --filter "attn_decode_i8tile/" --seed 20265801 \
      --receipt "$out/kernel-check.jsonl" | tail -n 12
    for flt in "attn_decode_i8tile/q8_0-planes/32-8x128/n1@16383" "attn_decode_pv16/q8_0-q5_1/32-8x128/n1@16383/max_splits96" \
      "attn_decode_f16mma/f16-f16/32-8x128/n1@16383/max_splits96/preload"; do
      timeout 120 "$bin/kernel-check" --section attn --filter "$flt" --perf --reps 50 --seed 20265802 \
        --receipt "$out/kernel-check-perf.jsonl" | grep -E "us|FAIL" | head -n 8
    done
    timeout 120 "$bin/kernel-check" --section fused --filter "neox_norm_pv16_pre_ks_si_ms96/q8_0-q5_1/32-8x128/n1@16512" \
      --perf --reps 50 --seed 20265803 --receipt "$out/kernel-check-perf.jsonl" | grep -E "us|FAIL" | head -n 8
    ;;
  s58)
    # The fifty-eighth session's first call: on an H200 the README's 8B decode rows at the defaults (r55h);
    # on another card g57 (IQ4_XS's GLU one task vs two). A "dense" pack. ~4 minutes on an H200, ~3 elsewhere.
    gpu_info
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then rows_8b; exit 0; fi
    synth qwen3-8b iq4_xs
    tg_on 0,4096 3 200 --arm configs/arm-base.toml --arm configs/arm-mmvs-q5k-iq4xs-two-task.toml
    rm -f "$f" "$f.done"
    ;;
  r55h)
    # r55's H200 branch alone (the README's 8B decode rows at the fifty-fifth session's defaults); nothing on
    # another card (r55's probe ran). A "dense" (or "slim") pack. ~4 minutes on an H200.
    gpu_info
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then rows_8b; fi
    ;;
  r55)
    # On an H200: the README's qwen3-8b decode rows at the fifty-fifth session's defaults (q4_0's 8-warp
    # o projection and GLU). On another card: q4_0 tg128 at 16384 keys against the reversed arm (w55 took
    # 0 / 4096). A "slim" pack. ~4 minutes.
    gpu_info
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then rows_8b; exit 0; fi
    synth qwen3-8b q4_0
    tg_on 16384 3 150 --arm configs/arm-base.toml --arm configs/arm-emit-w8-off.toml
    rm -f "$f" "$f.done"
    ;;
  w55b)
    # w55's one failure fixed (CudaModels.EmitNormWideSameBytes asserted the wide rule's variants with
    # kernels.mmvs_emit_norm_short_w8 at its new default, which takes that model's 4096-weight o rows):
    # the suite at the new defaults again. Then ncu of the emitting GLU at 8 warps, Q4_K (w55: 0.945x at
    # the step, no spill since TaskQ4KWord) against its 16-warp form and Q4_0's 8-warp form (1.018x): is the
    # 8-warp Q4_K form issue-bound (the hypothesis in bench/notes/norm-decode.md)? Any sm_90 card, a "slim"
    # pack. ~3 minutes.
    gpu_info
    cuda_vs_cpu "" 10
    ncu_src mmvs_id "q4k-w8|mmvs_emit_kernel<\\(memra::QType\\)12, \\(int\\)1, \\(int\\)8|mmvs_glu_emit/Q4_K/12288x4096/silu/ns/w8" \
      "q4k-w16|mmvs_emit_kernel<\\(memra::QType\\)12, \\(int\\)1, \\(int\\)16|mmvs_glu_emit/Q4_K/12288x4096/silu/ns" \
      "q40-w8|mmvs_emit_kernel<\\(memra::QType\\)2, \\(int\\)1, \\(int\\)8|mmvs_glu_emit/Q4_0/12288x4096/silu/ns/w8"
    ;;
  w55)
    # The fifty-fifth session's flip (kernels.mmvs_emit_norm_short_w8 = kernels.mmvs_glu_emit_w8 = q4_0: a
    # q4_0 model's o projection in 8-warp CTAs with the whole row in flight, the emitting GLU in 8-warp CTAs
    # landing beside it during the attention). A "slim" pack, any sm_90 card (on an H200 the README's 8B
    # decode rows at the new defaults first). The suite at the new defaults, the two kernels' gates, then
    # qwen3-8b q4_0 tg128 at 0 / 4096 keys against the reversed arms (both off; the GLU's only), 5 reps
    # interleaved with an A/A copy, and q4_k_m at 0 / 4096 keys (the defaults unchanged by construction: no
    # type of it listed) with the same layout for Q4_K (TaskQ4KWord: its 8-warp forms without spill; the
    # kernel-check gates above cover them). ~8 minutes (~11 on an H200). (ov54 / ov54b / ov54c / ov54d, the probes behind it, and their arms:
    # git show 2880860:scripts/device-run.sh.)
    gpu_info
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then rows_8b; fi
    cuda_vs_cpu "" 10
    kc mmvs_id mmvs_glu_emit 20265501 150
    kc mmvs_id mmvs_emit_norm 20265502 150
    synth qwen3-8b q4_0
    tg_on 0,4096 5 200 --arm configs/arm-base.toml --arm configs/arm-emit-w8-off.toml --arm configs/arm-glu-emit-w8-off.toml
    rm -f "$f" "$f.done"
    synth qwen3-8b q4_k_m
    tg_on 0,4096 5 200 --arm configs/arm-base.toml --arm configs/arm-emit-w8-off.toml --arm configs/arm-emit-w8-q4k.toml \
      --arm configs/arm-glu-emit-w8-q4k.toml
    rm -f "$f" "$f.done"
    ;;
  h52)
    # On an H200 only: the README decode rows at this session's HEAD (qwen3-8b q4_k_m tg128 at 0 / 4096 /
    # 16384 keys, q4_0 and q8_0 at 0; r50's rows without its MoE row) and pm53's DRAM sampling of
    # q4_k_m at 0 and 16384 keys on the card of the targets (where its 4.8 TB/s leaves the step's
    # boundaries a larger share than the H100's 3.35). Take the rows with scripts/readme-rows.py. A
    # "trace" pack (pp-bench, gguf-synth and the CUPTI libraries). ~7 minutes.
    gpu_info
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "h52: not an H200, no rows"; exit 0; }
    rows_8b pm
    ;;
  pm54)
    # pm53's sampling of qwen3-32b q4_k_m at 0 keys (its 5120-wide rows take neither the emits nor the
    # deferred norm: where its DRAM idles against the 8B's). Any sm_90 card. A "trace" pack. ~5 minutes.
    gpu_info
    synth qwen3-32b q4_k_m 300
    pm_at 0 qwen3-32b-q4_k_m
    rm -f "$f" "$f.done"
    ;;
  pm53)
    # pm52's sampling on the other decode rows: qwen3-8b q4_k_m at 16384 keys (the depth attention's DRAM
    # share: instruction-bound by its ncu count, bench/notes/attn-stage16.md), q4_0 and q8_0 at 0 keys
    # (where their steps leave the DRAM idle against q4_k_m's), 1000 ns with the kernel records. Any
    # sm_90 card (an H200 preferred). A "trace" pack. ~4 minutes.
    gpu_info
    synth qwen3-8b q4_k_m
    pm_at 16384 q4_k_m
    rm -f "$f" "$f.done"
    for mix in q4_0 q8_0; do synth qwen3-8b $mix; pm_at 0 $mix; rm -f "$f" "$f.done"; done
    ;;
  t50b)
    # The qwen3-32b q4_k_m step at this session's HEAD as a CUPTI timeline at 0 keys (its 5120-wide rows
    # take neither emit nor the deferred norm: where its 0.62 of the roofline goes). Any sm_90 card. A
    # "trace" pack. ~4 minutes.
    gpu_info
    synth qwen3-32b q4_k_m 300
    traces_at 0 -- 32b
    rm -f "$f" "$f.done"
    ;;
  r50)
    # moe43's MoE README row on an H200 only (qwen3-30b-a3b q8_0 tg128 + pp512 at the defaults; the dense
    # rows moved to h52 in the fifty-second session). Take it with scripts/readme-rows.py. A "slim" pack.
    # ~6 minutes.
    gpu_info
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "r50: not an H200, no rows"; exit 0; }
    # (the dense rows: h52, which also samples the DRAM; this phase keeps the MoE row)
    synth qwen3-30b-a3b q8_0 300
    timeout 150 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
      --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f" "$f.done"
    ;;
  hn50)
    # The Q4_K high-nibble change (6a6944e, no key) timed against the build before it (dbb6c8e in
    # .device/old: device-prepare.sh's fourth argument): kernel times of the Q4_K matvecs (GLU, plain
    # down shape, the GLU emit) in both builds, then qwen3-8b q4_k_m tg128 at 0 keys, the two builds'
    # processes alternating, each twice (the second run of each is its A/A). The new build's pack and
    # the old build do not fit one carry (66 MiB): ran as a call with a "slim" pack, then at once on the
    # same warm machine (.device kept) a call carrying only the old build (pp-bench, kernel-check,
    # libmemra.so stripped, as .device/old/... in an xz tar: 26 MiB) and unpacking it. The old build:
    # `git worktree add ../old dbb6c8e`, then cmake --preset release and the three targets there (ccache
    # makes it minutes). ~2 minutes.
    gpu_info
    "$bin/pp-bench" --version; .device/old/bin/pp-bench --version
    for b in "$bin" .device/old/bin; do
      for c in "mmvs mmvs_ail_glu_cap5/Q4_K/12288x4096/m1" "mmvs mmvs_ail_cap6/Q4_K/4096x12288/m1" "mmvs_id mmvs_glu_emit/Q4_K/12288x4096/silu/ns"; do
        timeout 90 "$b/kernel-check" --section ${c%% *} --filter "${c#* }" --perf --reps 50 | grep -E " us|FAIL" | tail -n 2 | sed "s|^|$b |"
      done
    done
    synth qwen3-8b q4_k_m
    for b in "$bin" .device/old/bin "$bin" .device/old/bin; do
      timeout 100 "$b/pp-bench" -m "$f" -p 0 -n 128 -d 0 -r 5 --set receipt.hash_model=false \
        --set kernels.prefill_f16_weights=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp" | sed "s|^|$b |"
    done
    rm -f "$f" "$f.done"
    ;;
  t50)
    # The step at the fiftieth session's start (4daf0ae: both emits on) as CUPTI timelines: qwen3-8b
    # q4_k_m at 0 and 16384 keys, q4_0 and q8_0 at 0 keys (where each row's time goes now). Any sm_90
    # card (the note says which). A "trace" pack. ~3 minutes.
    gpu_info
    synth qwen3-8b q4_k_m
    traces_at 0 16384 -- q4km
    rm -f "$f"
    for mix in q4_0 q8_0; do synth qwen3-8b $mix; traces_at 0 -- $mix; rm -f "$f"; done
    ;;
  t43)
    # The step at 16384 keys on the H200 at today's defaults (qwen3-8b q4_k_m): the timeline at 16384
    # and 0 keys (what the depth attention costs per layer against its cache bytes). A "trace" pack. ~2 minutes.
    gpu_info
    synth qwen3-8b q4_k_m
    traces_at 16384 0
    rm -f "$f"
    ;;
  r49)
    # The README decode rows at the forty-ninth session's defaults, on an H200 only (the suite at these
    # defaults: s49 on an H100, 61/61): qwen3-8b q8_0 and q4_k_m tg128 at 0 keys beside the emit's
    # reversed arm (A/A copy). Take them with scripts/readme-rows.py --arm configs/arm-base.toml. A
    # "slim" pack. ~3 minutes.
    gpu_info
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "r49: not an H200, no rows"; exit 0; }
    for mix in q8_0 q4_k_m; do
      synth qwen3-8b $mix
      tg_on 0 5 100 --arm configs/arm-base.toml --arm configs/arm-mmvs-emit-norm-off.toml
      rm -f "$f" "$f.done"
    done
    ;;
  s49)
    # After the forty-ninth session's flips (kernels.mmvs_emit_norm on at 16 warps, kernels.mmvs_glu_emit
    # for q4_k and q4_0): the whole CUDA-vs-CPU suite at the defaults; then on an H200 only the README
    # decode rows at the defaults beside the two reversed arms (A/A copy): qwen3-8b q4_k_m tg128 at 0 /
    # 4096 / 16384 keys, q4_0 and q8_0 tg128 (take them with scripts/readme-rows.py --arm
    # configs/arm-base.toml). A "slim" pack. ~6 minutes on an H200.
    gpu_info
    cuda_vs_cpu "" 10
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "s49: not an H200, no README rows"; exit 0; }
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 5 240 --arm configs/arm-base.toml --arm configs/arm-mmvs-emit-norm-off.toml \
      --arm configs/arm-mmvs-glu-emit-off.toml
    rm -f "$f" "$f.done"
    for mix in q4_0 q8_0; do
      synth qwen3-8b $mix
      tg_on 0 5 120 --arm configs/arm-base.toml --arm configs/arm-mmvs-emit-norm-off.toml
      rm -f "$f" "$f.done"
    done
    ;;
  ge49)
    # kernels.mmvs_glu_emit (built in the forty-ninth session: the gate + up launch in 32-row CTAs writes
    # the down's q8s planes, no quantize launch). Gates: kernel-check mmvs_id mmvs_glu_emit/* and the
    # emit tests (CudaModels.EmitNormSameBytes with the key in run 3); kernel times against the GLU
    # launch alone; then tg128 at depth 0 of qwen3-8b q8_0 / q4_k_m / q4_0 at the defaults against the
    # key's arm for every type (ran as a boolean key, the arm then "mmvs_glu_emit = true"; now the type
    # list's -all arm), interleaved with an A/A copy (two arms: q8_0 fits an H100 so). A "slim" pack, any
    # sm_90 card. ~5 minutes.
    gpu_info
    kc mmvs_id mmvs_glu_emit 20264903 150
    gpu_tests ge "CudaModels.EmitNorm*:CudaModels.NormDefer*" 120
    for flt in mmvs_glu_emit/Q4_K/12288x4096/silu/ns mmvs_glu_emit/Q8_0/12288x4096/silu/ns; do
      timeout 60 "$bin/kernel-check" --section mmvs_id --filter "$flt" --perf --reps 50 | grep -E "us|FAIL" | tail -n 2
    done
    for flt in mmvs_ail_glu_cap5/Q4_K/12288x4096/m1 mmvs_ail_glu/Q8_0/12288x4096/m1; do
      timeout 60 "$bin/kernel-check" --section mmvs --filter "$flt" --perf --reps 50 | grep -E "us|FAIL" | tail -n 2
    done
    for mix in q8_0 q4_k_m q4_0; do
      synth qwen3-8b $mix
      tg_on 0 5 200 --arm configs/arm-base.toml --arm configs/arm-mmvs-glu-emit-all.toml
      rm -f "$f" "$f.done"
    done
    ;;
  ge49b)
    # ge49's confirmation with kernels.mmvs_glu_emit as a type list: the Q4_K and Q4_0 gate + up
    # launches (configs/arm-mmvs-glu-emit.toml; ge49 measured every type: q4_k_m 1.023x, q4_0 1.014x,
    # q8_0 0.987x): qwen3-8b q4_k_m tg128 at 0 and 4096 keys, q4_0 at 0, against the defaults with an
    # A/A copy; the emit tests again. A "slim" pack, any sm_90 card. ~4 minutes.
    gpu_info
    gpu_tests ge "CudaModels.EmitNorm*" 120
    synth qwen3-8b q4_k_m
    tg_on 0,4096 5 200 --arm configs/arm-base.toml --arm configs/arm-mmvs-glu-emit.toml
    rm -f "$f" "$f.done"
    synth qwen3-8b q4_0
    tg_on 0 5 200 --arm configs/arm-base.toml --arm configs/arm-mmvs-glu-emit.toml
    rm -f "$f" "$f.done"
    ;;
  en49h)
    # After kernels.mmvs_emit_norm's flip (on at 16 warps): the whole CUDA-vs-CPU suite at the new
    # defaults, then qwen3-8b q4_k_m tg128 at 0 / 4096 / 16384 keys at the defaults beside the reversed
    # arm (A/A copy); on an H200 also q4_0 and q8_0 tg128 (the README rows: take them with
    # scripts/readme-rows.py --arm configs/arm-base.toml; the 32B's 5120-column norms stay full, its row
    # is untouched). A "slim" pack. ~6 minutes.
    gpu_info
    cuda_vs_cpu "" 10
    synth qwen3-8b q4_k_m
    tg_on 0,4096,16384 5 240 --arm configs/arm-base.toml --arm configs/arm-mmvs-emit-norm-off.toml
    rm -f "$f" "$f.done"
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "en49h: not an H200, no README rows"; exit 0; }
    for mix in q4_0 q8_0; do
      synth qwen3-8b $mix
      tg_on 0 5 120 --arm configs/arm-base.toml --arm configs/arm-mmvs-emit-norm-off.toml
      rm -f "$f" "$f.done"
    done
    ;;
  nd49)
    # qwen3-32b q4_k_m tg128 at 0 keys: the defaults (its 5120-column norms full: kernels.norm_defer_max_cols
    # = 4096, so kernels.mmvs_emit_norm does not apply) against the deferred norm at every width (the
    # emit then takes its norms), one arm resident at a time (a 32B file three times does not fit an
    # H100). The deferred form alone lost 0.977-0.990x there (nd31b / nd32b); with the norm launch gone
    # the balance may differ. A "slim" pack, any sm_90 card. ~5 minutes.
    gpu_info
    synth qwen3-32b q4_k_m 200
    tg_on 0 5 300 --arm configs/arm-base.toml --arm configs/arm-norm-defer-any-width.toml --arm configs/arm-base.toml \
      --set bench.interleave=false
    rm -f "$f" "$f.done"
    ;;
  en49)
    # kernels.mmvs_emit_norm (built in the forty-ninth session: the o and down launches take the next
    # deferred norm, CTAs of 32 rows; the deferred norm's partials now one per 32-element block). The
    # rows first: tg128 at depth 0 of qwen3-8b q8_0 / q4_k_m / q4_0, arms base, emit at 8, 16 and 32
    # warps, interleaved with an A/A copy; then kernel times of the emit against the two launches it
    # replaces. Its gates are en49g. A "slim" pack, any sm_90 card (an H200 for the rows beside the
    # targets). ~6 minutes.
    gpu_info
    for mix in q8_0 q4_k_m q4_0; do
      synth qwen3-8b $mix
      tg_on 0 5 240 --arm configs/arm-base.toml --arm configs/arm-mmvs-emit-norm-w8.toml --arm configs/arm-mmvs-emit-norm.toml \
        --arm configs/arm-mmvs-emit-norm-w32.toml
      rm -f "$f" "$f.done"
    done
    for flt in mmvs_emit_norm/Q8_0/4096x12288/w mmvs_emit_norm/Q4_K/4096x4096/w mmvs_residual/Q8_0/4096x12288/m1/ \
      mmvs_residual/Q4_K/4096x4096/m1/ norm_defer/4096/split8/bytes; do
      timeout 60 "$bin/kernel-check" --section mmvs_id --filter "$flt" --perf --reps 50 | grep -E "us|FAIL" | tail -n 3
    done
    ;;
  en49b)
    # en49's q8_0 row where five resident q8_0 arms do not fit (an H100: 80 GB): base and the emit at 16
    # warps, interleaved with an A/A copy. A "slim" pack. ~2 minutes.
    gpu_info
    synth qwen3-8b q8_0
    tg_on 0 5 240 --arm configs/arm-base.toml --arm configs/arm-mmvs-emit-norm.toml
    rm -f "$f" "$f.done"
    ;;
  en49g)
    # en49's gates: kernel-check mmvs_id (the emit cases, the deferred norm and its consumers at the new
    # partials), the CUDA-vs-CPU suite at the defaults and with the emit (16 warps) as its base. Any
    # sm_90 card, a "slim" pack. ~6 minutes.
    gpu_info
    kc mmvs_id mmvs_emit_norm 20264900 150
    kc mmvs_id norm_defer 20264901 120
    kc mmvs_id mmvs_norm_ss 20264902 240
    cuda_vs_cpu "" 10
    suite_with emit --config configs/arm-mmvs-emit-norm.toml
    ;;
  chain48)
    # What holds the chain on the H200. (1) pages_only (built in the forty-eighth session: the pages
    # consumed without a task's staging, reduction, stores and fence) against no_deps: the per-task work
    # (H100: consumers' page work free, per-task work 6-15%, boundaries ~30%). (2) The split schedule
    # (ChainParams::split, built in the forty-eighth session): every CTA an equal share of every
    # matrix's pages instead of whole 32-row tasks dealt round robin, whose matrices of 128-384 tasks
    # leave CTAs idle at every boundary (a model of that alone predicts full / stream 1.35-1.6, the
    # measured ratio). Both schedules, dp4a and mma, 8 warps, 2 CTAs per SM, rings of 5 and 3 pages.
    # A "slim" pack, any sm_90 card (an H200 best). ~1 minute.
    gpu_info
    for st in 0 3; do
      timeout 200 "$bin/rp-q4-probe" --chain-only --chain-types q4_0,q4_k --chain-forms dp4a,mma --chain-consumers 8 \
        --chain-ctas-per-sm 2 --chain-stages $st --chain-schedules tasks,split --chain-check-layers 0,35 \
        --receipt "$out/rp-q4-probe.jsonl" | grep -E "^(form|q4)"
    done
    ;;
  moe43)
    # The MoE defaults flipped in the forty-third session (kernels.moe_device_route_prefill and
    # kernels.moe_glu_q8_1, from moe37 / moe37b): the whole GPU suite at the defaults (any sm_90 card),
    # then on an H200 only the README row of qwen3-30b-a3b q8_0 (tg128 and pp512 at the defaults) beside
    # the reversed arms, one at a time. A "slim" pack. ~4 minutes.
    gpu_info
    cuda_vs_cpu "Qwen3Moe" 14
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "moe43: not an H200, no rows"; exit 0; }
    synth qwen3-30b-a3b q8_0 300
    timeout 240 "$bin/pp-bench" -m "$f" -p 512 -n 128 -d 0 -r 5 --arm configs/arm-base.toml \
      --arm configs/arm-moe-host-route-prefill.toml --arm configs/arm-moe-glu-q8-1-off.toml \
      --arm configs/arm-moe-combine-residual-off.toml --set bench.interleave=false \
      --set receipt.hash_model=false --receipt "$out/pp-bench.jsonl" 2>&1 | grep -E "^\| /tmp"
    rm -f "$f"
    ;;
  s45)
    # The forty-fifth session's flips together (sample.on_backend, kernels.moe_gate_up_one_launch, the
    # Q5_K row pairs with one task, mmvf2 at 1 row per warp: the f32 models' tests ran with it in g44)
    # and the chain probe's per-chunk waits (built after chain45's first run): the CUDA-vs-CPU suite
    # at the defaults, run-gen sampled at the defaults (the device sampler) and with the host path,
    # then rp-q4-probe --chain (full, per-chunk, no-deps, stream-only modes) for Q4_0 and Q4_K at 8 and
    # 16 consumer warps, 1 and 2 CTAs per SM. A "slim" pack (rp-q4-probe in it). Any sm_90 card. ~4 minutes.
    gpu_info
    cuda_vs_cpu "" 12
    synth qwen3-8b q4_k_m
    for ob in true false; do
      timeout 60 "$bin/run-gen" "$f" -p "Once upon a time" -n 256 --temp 0.8 --seed 1 --repeat-penalty 1.1 \
        --set sample.on_backend=$ob --set receipt.hash_model=false --receipt "$out/run-gen.jsonl" 2>&1 |
        grep -aE "^run-gen:" | sed "s/^/on_backend=$ob /"
    done
    rm -f "$f"
    timeout 300 "$bin/rp-q4-probe" --chain-only --chain-consumers 8,16 --chain-ctas-per-sm 1,2 \
      --receipt "$out/rp-q4-probe.jsonl" | tail -n 12
    ;;
  chain45)
    # The persistent decode-chain probe (rp-q4-probe --chain; kernels/matvec_rp/chain_persist.h,
    # bench/notes/decode-chain-probe.md): 36 layers of qwen3-8b-shaped Q4_0 and Q4_K matvecs (3.9 GB) with
    # every matrix waiting for the whole previous one, streamed by one resident grid through
    # shared-memory page rings; checked against f64 matrix by matrix, timed in three modes (full,
    # no dependency waits, pages streamed without compute) for 4 / 8 / 16 consumer warps at 1 and 2
    # CTAs per SM, beside the split-plane launches of the same shapes. Then the ring depth at the
    # best-looking forms. Built without a device: its first run. A "trace" pack (rp-q4-probe is in it).
    # ~3 minutes; an H100 answers the question for its own bandwidth too.
    gpu_info
    timeout 300 "$bin/rp-q4-probe" --chain --chain-consumers 4,8,16 --chain-ctas-per-sm 1,2 \
      --receipt "$out/rp-q4-probe.jsonl" | tail -n 24
    for st in 3 6; do
      timeout 120 "$bin/rp-q4-probe" --chain-only --chain-consumers 8,16 --chain-ctas-per-sm 1 --chain-stages "$st" \
        --chain-check-layers 0,35 --receipt "$out/rp-q4-probe.jsonl" | tail -n 4
    done
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
esac
# The device tool brings back at most 8 files from $OUT: past that, the timelines, the test logs
# and gguf-synth.jsonl travel in one tar (nd31c's ninth file, a timeline, stayed behind). The phase
# log, still being written, stays out.
if (($(find "$out" -maxdepth 1 -type f | wc -l) > 8)); then
  (cd "$out" && tar -cf bundle.tar --remove-files $(ls trace*.jsonl.gz test_*.log gguf-synth.jsonl 2>/dev/null)) &&
    echo "more than 8 files: timelines, test logs and gguf-synth.jsonl in bundle.tar"
fi
echo "== done $(date -u +%FT%TZ)"
