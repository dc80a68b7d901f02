// The mmvs decode matvec's row partition on rows of qwen3-32b's width (kernels.mmvs_split_min_k):
// the synth fixtures are 256 wide, so this writes a two-layer model whose q/k/v, gate/up and head
// rows are 5120 weights (80 tasks) to a temporary file. And mmvs on Q5_K / IQ4_XS weights
// (kernels.mmvs_types) on q5_k_m / iq4_xs models written the same way.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <cstring>

#include "synth/plan.h"
#include "synth/synth.h"
#include "backend_cuda/gpu_model_runs.h"

using namespace memra;
using namespace memra::gputest;

namespace {

// qwen3-32b-tiny at qwen3-32b's width: 5120 wide, 16 / 2 heads of 128, ff 1280, two layers, q4_k_m
// (Q4_K q / k / o / gate / up, Q6_K v and down where the mix puts them, a Q6_K head): the 5120-weight
// rows take the plain, mixed q/k/v, GLU row-pair and one-task row-pair head launches. width: another
// n_embd for the wide form (4096: qwen3-8b's rows, the GLU emit's two task groups per row).
std::string write_wide_qwen3(const char* tag, const char* mix = "q4_k_m", bool wide = true, int64_t width = 5120) {
  synth::Dims d = synth::find_preset(wide ? "qwen3-32b-tiny" : "qwen3-8b-tiny").dims;
  if (wide) {
    d.n_layer = 2;
    d.head_dim = 128;
    d.n_embd = width;
  }
  const std::string path = ::testing::TempDir() + "memra-" + tag + (wide ? "-qwen3-32b-wide" + std::to_string(width) + "-" : "-qwen3-8b-tiny-") +
                           mix + ".gguf";
  synth::WriteOptions wo;
  wo.path = path;
  wo.hash = false;
  synth::write_model(synth::make_plan(d, synth::mix_from_name(mix)), wo);
  return path;
}

// After a kPrompt-token prompt (token i: (i * mul + add) % n_vocab), one decode step of batch[0]
// against row 0 of a verify batch of the three tokens at the same position (the cache rolled back
// between): true when the logits are the same bytes.
bool decode_equals_verify(ModelRun& run, int mul, int add, std::array<int32_t, 3> batch) {
  const int64_t nv = run.model->hparams().n_vocab;
  std::vector<int32_t> ids(kPrompt);
  for (int i = 0; i < kPrompt; ++i) ids[(size_t)i] = (int32_t)((i * mul + add) % nv);
  (void)step(run, ids, 0, true);
  for (auto& b : batch) b = (int32_t)(b % nv);
  const auto one = step(run, std::span<const int32_t>(batch.data(), 1), kPrompt, false);
  run.kv->truncate(kPrompt);
  const auto all = step(run, batch, kPrompt, true);
  return all.size() >= (size_t)nv && one.size() >= (size_t)nv && std::memcmp(one.data(), all.data(), (size_t)nv * 4) == 0;
}

}  // namespace

// kernels.mmvs_split_min_k = 5184: the 5120-weight rows on one warp each (another fixed order). Each
// configuration against the CPU oracle with check_model's rule, the one-warp launches taken
// ("_splitmin81"), and decode == verify bit for bit (a one-token step's logits are the bytes of row 0
// of a 3-token verify batch of the same token at the same position, the cache rolled back between).
TEST(CudaModels, MmvsSplitMinWideRows) {
  MEMRA_REQUIRE_GPU();
  const std::string path = write_wide_qwen3("split-min");
  for (int64_t min_k : {int64_t{4160}, int64_t{5184}}) {
    SCOPED_TRACE(min_k);
    Config c = gpu_config(true);
    c.kernels.mmvs_split_min_k = min_k;
    const bool moved = min_k == 5184;
    check_model_file(path, moved ? "qwen3-32b-wide q4_k_m split_min_k 5184" : "qwen3-32b-wide q4_k_m split_min_k 4160", c,
                     moved ? "_splitmin81" : nullptr, "mmvs_m1");
    ModelRun run = open_run(backend::make_cuda_backend(c), path, kv::KvOptions{64, QType::Q8_0, QType::Q5_1});
    EXPECT_TRUE(decode_equals_verify(run, 29, 5, {77, 91, 13})) << "decode != verify row 0";
    const auto v = run.be->variants();
    ASSERT_TRUE(v.count("mmvs_m1"));
    EXPECT_EQ(v.at("mmvs_m1").find("_splitmin81") != std::string::npos, moved) << v.at("mmvs_m1");
  }
}

// kernels.mmvs_types with q5_k and iq4_xs (the default since the forty-fourth session): the Q5_K /
// IQ4_XS matrices of q5_k_m and iq4_xs models (the iq4_xs mix has Q5_K attn_v and early ffn_down) on
// mmvs, against the CPU oracle with check_model_file's rule, on the 256-wide qwen3-8b twin (one warp per
// row) and the 5120-wide one (two warps per row); decode == verify bit for bit (mmvs gives a row the
// same bits at every m). With the list before that session (the arm configs/arm-mmvs-q5k-iq4xs-off.toml)
// the same model runs (oracle check) without taking mmvs for them (the GGUF-block matvec, mmvq).
TEST(CudaModels, MmvsQ5kIq4xsAgainstOracle) {
  MEMRA_REQUIRE_GPU();
  for (const char* mix : {"q5_k_m", "iq4_xs"})
    for (bool wide : {false, true}) {
      const std::string path = write_wide_qwen3("q5k", mix, wide);
      const bool iq4 = std::string(mix) == "iq4_xs";
      for (bool on : {false, true}) {
        SCOPED_TRACE(std::string(mix) + (wide ? " wide " : " tiny ") + (on ? "on mmvs (defaults)" : "mmvq"));
        Config c = gpu_config(true);
        if (!on) c.kernels.mmvs_types = {"q4_k", "q6_k", "q8_0", "q4_0"};
        const std::string rel = std::string(wide ? "qwen3-32b-wide " : "qwen3-8b-tiny ") + mix + (on ? " mmvs_types+q5_k+iq4_xs" : "");
        check_model_file(path, rel, c, on ? (iq4 ? "mmvs_glu.IQ4_XS" : "mmvs_glu.Q5_K") : nullptr, "matvec");
        ModelRun run = open_run(backend::make_cuda_backend(c), path, kv::KvOptions{64, QType::Q8_0, QType::Q5_1});
        const bool same = decode_equals_verify(run, 31, 3, {57, 23, 101});
        if (on) {
          EXPECT_TRUE(same) << "decode != verify row 0";
        }
        const auto v = run.be->variants();
        const std::string m1 = v.count("mmvs_m1") ? v.at("mmvs_m1") : "";
        EXPECT_EQ(m1.find(iq4 ? "IQ4_XS" : "Q5_K") != std::string::npos, on) << m1;
      }
    }
}

// kernels.mmvf_v2: the float-weight decode matvecs on mmvf2 (rows per warp 1, 2, 4; the fused GLU and
// residual epilogues) on an f16 qwen3 twin written here and the shared f32 qwen3 fixture, against the
// CPU oracle with check_model_file's rule, the path taken ("mmvf2_glu" in the matvec variants), and
// decode == verify bit for bit.
TEST(CudaModels, Mmvf2AgainstOracle) {
  MEMRA_REQUIRE_GPU();
  std::vector<std::pair<std::string, std::string>> files = {{write_wide_qwen3("mmvf2", "f16", false), "qwen3-8b-tiny f16"}};
  if (std::filesystem::exists(shared_dir() + "/models/synth/qwen3-f32.gguf"))
    files.emplace_back(shared_dir() + "/models/synth/qwen3-f32.gguf", "synth/qwen3-f32.gguf");
  for (const auto& [path, rel] : files)
    for (int rpw : {1, 2, 4}) {
      SCOPED_TRACE(rel + " rows per warp " + std::to_string(rpw));
      Config c = gpu_config(true);
      c.kernels.mmvf_v2 = true;
      c.kernels.mmvf_rows_per_warp = rpw;
      check_model_file(path, rel + " mmvf2 r" + std::to_string(rpw), c, "mmvf2_glu", "matvec");
      ModelRun run = open_run(backend::make_cuda_backend(c), path, kv::KvOptions{64, QType::Q8_0, QType::Q5_1});
      EXPECT_TRUE(decode_equals_verify(run, 13, 7, {41, 5, 99})) << "decode != verify row 0";
      const auto v = run.be->variants();
      ASSERT_TRUE(v.count("matvec"));
      EXPECT_NE(v.at("matvec").find("mmvf2+residual_r" + std::to_string(rpw)), std::string::npos) << v.at("matvec");
    }
}

// kernels.mmvs_glu_one_task: the one-token GLU launches with one task per matrix in flight give the
// same bytes as the two-task launches (decode steps and a verify batch), on the synth q8_0 and q4_k_m
// fixtures, at the default caps (the one-task instance capped by the GLU rule) and uncapped; the
// instance taken ("_g1t" in the mmvs variants).
TEST(CudaModels, MmvsGluOneTaskSameBytes) {
  MEMRA_REQUIRE_GPU();
  MEMRA_REQUIRE_FIXTURES();
  for (const char* file : {"qwen3-q8_0.gguf", "qwen3-q4_k_m.gguf", "llama-q8_0.gguf"}) {
    SCOPED_TRACE(file);
    std::vector<Config> c(3, gpu_config(true));
    for (auto& ci : c) {
      ci.kernels.mmvs_glu_pairs.clear();  // (the GLU pairs take precedence)
      ci.kernels.mmvs_glu_emit.clear();   // (as the emitting GLU launch does)
    }
    c[0].kernels.mmvs_glu_one_task.clear();  // (the default takes it for Q8_0)
    c[1].kernels.mmvs_glu_one_task = c[2].kernels.mmvs_glu_one_task = {"q4_k", "q6_k", "q8_0", "q4_0", "q5_k", "iq4_xs"};
    c[2].kernels.mmvs_min_blocks_glu = 0;
    auto runs = open_synth_runs(file, c);
    expect_same_decode_bytes(runs, 29, 6, 17);
    const int32_t three[3] = {3, 14, 15};
    expect_same_batch_bytes(runs, three);
    for (int r = 0; r < 3; ++r) {
      const auto& v = runs[(size_t)r].be->variants();
      ASSERT_TRUE(v.count("mmvs_m1")) << "run " << r;
      EXPECT_EQ(v.at("mmvs_m1").find("_g1t") != std::string::npos, r > 0) << "run " << r << ": " << v.at("mmvs_m1");
    }
  }
}

// kernels.mmvs_qkv_quads: the one-token q/k/v launches as row quads (one and two tasks per row in flight,
// the mixed Q4_K + Q6_K launch of the q4_k_m files included) change no byte of the decode or batch
// logits against the row pairs (quads 0); in the quads' runs every one-token q/k/v launch kind is a
// quad one ("_rq1_qkv" / "_rq_qkv"), in the pairs' run none.
TEST(CudaModels, MmvsQkvQuadsSameBytes) {
  MEMRA_REQUIRE_GPU();
  MEMRA_REQUIRE_FIXTURES();
  for (const char* file : {"qwen3-q8_0.gguf", "qwen3-q4_k_m.gguf", "llama-q8_0.gguf", "llama-q4_k_m.gguf"}) {
    SCOPED_TRACE(file);
    std::vector<Config> c(3, gpu_config(true));
    c[0].kernels.mmvs_qkv_quads = 0;  // the pairs (kernels.mmvs_row_pairs_qkv)
    c[1].kernels.mmvs_qkv_quads = 1;
    c[2].kernels.mmvs_qkv_quads = 2;
    auto runs = open_synth_runs(file, c);
    expect_same_decode_bytes(runs, 23, 5, 19);
    const int32_t three[3] = {7, 11, 2};
    expect_same_batch_bytes(runs, three);
    for (int r = 0; r < 3; ++r) {
      const auto& v = runs[(size_t)r].be->variants();
      ASSERT_TRUE(v.count("mmvs_m1")) << "run " << r;
      const std::string& s = v.at("mmvs_m1");
      int qkv = 0, quads = 0;
      for (const std::string& kind : launch_kinds(s)) {
        if (kind.find("_qkv") != std::string::npos) {
          ++qkv;
          quads += kind.find(r == 1 ? "_rq1_qkv" : "_rq_qkv") != std::string::npos ? 1 : 0;
        }
      }
      EXPECT_GT(qkv, 0) << "run " << r << ": " << s;
      EXPECT_EQ(quads, r == 0 ? 0 : qkv) << "run " << r << ": " << s;
    }
  }
}

// kernels.mmvs_row_pairs_verify: the verify rows (m = 2..8) of the paired types take the row pairs
// (one matrix, and the one-type q/k/v launches), changing no byte of the decode or the batch logits
// (batches of 2, 3, 5 and 8 rows, with the deferred norm at its default and off); only the key's runs
// have "_rp" verify launches (the backend's "mmvs_mn" kinds).
TEST(CudaModels, MmvsRowPairsVerifySameBytes) {
  MEMRA_REQUIRE_GPU();
  MEMRA_REQUIRE_FIXTURES();
  for (const char* file : {"qwen3-q4_k_m.gguf", "qwen3-q8_0.gguf", "llama-q8_0.gguf", "llama-q4_k_m.gguf"}) {
    SCOPED_TRACE(file);
    std::vector<Config> c(4, gpu_config(true));
    // Both values named: the suite's base configuration (--config / --set) may set either.
    c[0].kernels.mmvs_row_pairs_verify = c[2].kernels.mmvs_row_pairs_verify = false;
    c[1].kernels.mmvs_row_pairs_verify = c[3].kernels.mmvs_row_pairs_verify = true;
    c[2].kernels.norm_defer = c[3].kernels.norm_defer = false;
    auto runs = open_synth_runs(file, c);
    // (runs 0 / 1 and 2 / 3 pairwise: the deferred norm changes the bits, the pairs must not)
    std::span<ModelRun> a(runs.data(), 2), b(runs.data() + 2, 2);
    expect_same_decode_bytes(a, 31, 2, 19);
    expect_same_decode_bytes(b, 31, 2, 19);
    for (int n : {2, 3, 5, 8}) {
      std::vector<int32_t> ids((size_t)n);
      for (int i = 0; i < n; ++i) ids[(size_t)i] = (int32_t)((i * 13 + 5 * n) % runs[0].model->hparams().n_vocab);
      expect_same_batch_bytes(a, ids);
      expect_same_batch_bytes(b, ids);
    }
    for (int r = 0; r < 4; ++r) {
      const auto& v = runs[(size_t)r].be->variants();
      ASSERT_TRUE(v.count("mmvs_mn")) << "run " << r;
      EXPECT_EQ(v.at("mmvs_mn").find("_rp") != std::string::npos, r == 1 || r == 3) << "run " << r << ": " << v.at("mmvs_mn");
    }
  }
}

// kernels.mmvs_emit_norm: the residual launches (o, down) that take the next deferred norm give the
// bytes of the launch followed by the norm, on decode steps and (unfused there) verify batches, at
// 16 and 32 warps per CTA; kernels.mmvs_glu_emit (run 3): the gate + up launch writing the down's
// planes gives the bytes of the launch followed by the quantizer, at 16 and (run 4, kernels.mmvs_glu_emit_w8,
// with the residual launches at 8 too, kernels.mmvs_emit_norm_short_w8, both task groups in flight) 8 warps
// per CTA. decode == verify holds with both; the runs with a key take it
// ("emitted_by_residual_launch" among the backend's norm kinds at every norm but the first layer's,
// "_glu_emit" among the one-token launches, "_glu_emit_w8" in run 4).
TEST(CudaModels, EmitNormSameBytes) {
  MEMRA_REQUIRE_GPU();
  MEMRA_REQUIRE_FIXTURES();
  for (const char* file : {"qwen3-q4_k_m.gguf", "qwen3-q8_0.gguf", "llama-q8_0.gguf"}) {
    SCOPED_TRACE(file);
    std::vector<Config> c(5, gpu_config(true));
    c[0].kernels.mmvs_emit_norm = false;
    c[1].kernels.mmvs_emit_norm = c[2].kernels.mmvs_emit_norm = c[3].kernels.mmvs_emit_norm = true;
    c[1].kernels.mmvs_emit_norm_warps = c[3].kernels.mmvs_emit_norm_warps = 16;
    c[2].kernels.mmvs_emit_norm_warps = 32;
    for (int r = 0; r < 4; ++r) {
      c[r].kernels.mmvs_glu_emit.clear();
      c[r].kernels.mmvs_glu_emit_w8.clear();
      c[r].kernels.mmvs_emit_norm_short_w8.clear();
    }
    const std::vector<std::string> all = {"q4_k", "q6_k", "q8_0", "q4_0", "q5_k", "iq4_xs"};
    c[3].kernels.mmvs_glu_emit = all;
    c[4] = c[3];
    c[4].kernels.mmvs_emit_norm_short_w8 = all;  // (every row of these models is at most 4096 weights)
    c[4].kernels.mmvs_glu_emit_w8 = all;
    auto runs = open_synth_runs(file, c);
    expect_same_decode_bytes(runs, 37, 4, 23);
    const int32_t three[3] = {5, 9, 26};
    expect_same_batch_bytes(runs, three);
    for (int r = 0; r < 5; ++r) {
      const auto& v = runs[(size_t)r].be->variants();
      ASSERT_TRUE(v.count("norm") && v.count("mmvs_m1")) << "run " << r;
      EXPECT_EQ(v.at("norm").find("emitted_by_residual_launch") != std::string::npos, r > 0) << "run " << r << ": " << v.at("norm");
      EXPECT_EQ(v.at("mmvs_m1").find("_emit_norm_w") != std::string::npos, r > 0) << "run " << r << ": " << v.at("mmvs_m1");
      EXPECT_EQ(v.at("mmvs_m1").find("_glu_emit") != std::string::npos, r >= 3) << "run " << r << ": " << v.at("mmvs_m1");
      EXPECT_EQ(v.at("mmvs_m1").find("_glu_emit_w8") != std::string::npos, r == 4) << "run " << r << ": " << v.at("mmvs_m1");
      EXPECT_EQ(v.at("mmvs_m1").find("_emit_norm_w8_both") != std::string::npos, r == 4) << "run " << r << ": " << v.at("mmvs_m1");
      EXPECT_TRUE(decode_equals_verify(runs[(size_t)r], 7, 3, {11, 40, 2})) << "run " << r;
    }
  }
}

// One run of the model at path per configuration (a 64-row q8_0 / q5_1 cache), checked to give the
// same decode and verify-batch bytes.
static std::vector<ModelRun> open_runs_same_bytes(const std::string& path, const std::vector<Config>& c) {
  std::vector<ModelRun> runs;
  for (const Config& cfg : c)
    runs.push_back(open_run(backend::make_cuda_backend(cfg), path, kv::KvOptions{64, QType::Q8_0, QType::Q5_1}));
  expect_same_decode_bytes(runs, 37, 4, 23);
  const int32_t three[3] = {5, 9, 26};
  expect_same_batch_bytes(runs, three);
  return runs;
}

// kernels.smem_carveout: on 4096-wide two-layer models (q4_k_m, q4_0; the 8B's row lengths, so the
// emitting launches run), every decode kernel at the largest and the smallest preferred shared-memory
// carveout gives the decode and verify bytes of the driver's choice (run 0) and keeps decode == verify.
TEST(CudaModels, SmemCarveoutSameBytes) {
  MEMRA_REQUIRE_GPU();
  for (const char* mix : {"q4_k_m", "q4_0"}) {
    SCOPED_TRACE(mix);
    const std::string path = write_wide_qwen3("carveout", mix, true, 4096);
    std::vector<Config> c(3, gpu_config(true));
    c[1].kernels.smem_carveout = 100;
    c[2].kernels.smem_carveout = 0;
    auto runs = open_runs_same_bytes(path, c);
    for (int r = 0; r < 3; ++r) EXPECT_TRUE(decode_equals_verify(runs[(size_t)r], 7, 3, {11, 40, 2})) << "run " << r;
  }
}

// kernels.mmvs_emit_norm_warps_wide: on a 5120-wide two-layer model (qwen3-32b's residual rows: 160
// 32-row CTAs, more than one wave of 16-warp CTAs on a card of fewer than 160 SMs), with the deferred
// norm at every width, run 1 keeps the 16-warp rule (no emit there: the norm launches) and run 2 takes
// the 8-warp CTAs at two per SM; both give the same decode and verify bytes and keep decode == verify,
// for the Q4_K / Q6_K (q4_k_m) and Q4_0 residual launches.
TEST(CudaModels, EmitNormWideSameBytes) {
  MEMRA_REQUIRE_GPU();
  for (const char* mix : {"q4_k_m", "q4_0"}) {
    SCOPED_TRACE(mix);
    const std::string path = write_wide_qwen3("emit-wide", mix, true, 5120);
    std::vector<Config> c(2, gpu_config(true));
    for (Config& x : c) {
      x.kernels.norm_defer_max_cols = 0;
      x.kernels.mmvs_emit_norm = true;
      x.kernels.mmvs_emit_norm_warps = 16;
      x.kernels.mmvs_emit_norm_short_w8.clear();  // (this model's o projection rows are 4096 weights: the wide rule alone)
    }
    c[0].kernels.mmvs_emit_norm_warps_wide = 0;
    c[1].kernels.mmvs_emit_norm_warps_wide = 8;
    auto runs = open_runs_same_bytes(path, c);
    const bool past_one_wave = 5120 / 32 > cuda::Context::create()->info().sm_count;
    for (int r = 0; r < 2; ++r) {
      const auto& v = runs[(size_t)r].be->variants();
      ASSERT_TRUE(v.count("mmvs_m1")) << "run " << r;
      const std::string& m1 = v.at("mmvs_m1");
      EXPECT_TRUE(decode_equals_verify(runs[(size_t)r], 7, 3, {11, 40, 2})) << "run " << r;
      if (past_one_wave) {  // 16-warp CTAs are one per SM: 160 of them are refused, 8-warp ones taken
        EXPECT_EQ(m1.find("_emit_norm_w16") != std::string::npos, false) << "run " << r << ": " << m1;
        EXPECT_EQ(m1.find("_emit_norm_w8") != std::string::npos, r == 1) << "run " << r << ": " << m1;
      }
    }
  }
}
