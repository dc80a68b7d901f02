// The plan (names, shapes, per-tensor types, byte totals) against llama.cpp's own outputs:
// the Q4_K_M quantize log of the anchor run, llama-bench's model_size figures, and the tiny
// llama-quantize files in shared/models/synth (tied embeddings, 8-expert special cases).
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>

#include "core/error.h"
#include "gguf/gguf.h"
#include "synth/plan.h"

using namespace memra;
using namespace memra::synth;

namespace {

const std::string kShared = MEMRA_SHARED_DIR;

std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = (char)std::tolower((unsigned char)c);
  return r;
}

struct LogTensor {
  std::string name;
  std::vector<uint64_t> ne;  // 4 dims as printed
  std::string type;          // type written to the output file
};

// "[  10/ 399] blk.0.attn_v.weight - [  4096,   1024,      1,      1], type =    f16, converting to q6_K .. size = ..."
std::vector<LogTensor> parse_quantize_log(const std::string& path) {
  std::ifstream in(path);
  std::vector<LogTensor> out;
  const std::regex re(
      R"(^\[\s*(\d+)/\s*(\d+)\]\s+(\S+)\s+-\s+\[\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+)\],\s+type\s+=\s+(\w+),(\s+converting to (\w+))?)");
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!std::regex_search(line, m, re)) continue;
    LogTensor t;
    t.name = m[3];
    for (int k = 4; k <= 7; ++k) t.ne.push_back(std::stoull(m[k]));
    t.type = m[10].matched ? std::string(m[10]) : std::string(m[8]);
    out.push_back(t);
  }
  return out;
}

std::vector<uint64_t> pad4(std::vector<uint64_t> ne) {
  while (ne.size() < 4) ne.push_back(1);
  return ne;
}

Plan preset_plan(std::string_view preset, Mix m) { return make_plan(find_preset(preset).dims, m); }

}  // namespace

TEST(SynthPlan, Qwen3_8bQ4KMatchesQuantizeLogTensorByTensor) {
  const std::string log = kShared + "/anchors/raw/m1_llama-quantize_qwen3-8b_Q4_K_M.log";
  if (!std::filesystem::exists(log)) GTEST_SKIP() << "shared anchors not present: " << log;
  const auto expected = parse_quantize_log(log);
  ASSERT_EQ(expected.size(), 399u) << "the log lists 399 tensors";
  const Plan p = preset_plan("qwen3-8b", Mix::Q4_K_M);
  ASSERT_EQ(p.tensors.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& t = p.tensors[i];
    EXPECT_EQ(t.name, expected[i].name) << "position " << i;
    EXPECT_EQ(pad4(t.ne), expected[i].ne) << t.name;
    EXPECT_EQ(lower(qtype_name(t.type)), lower(expected[i].type)) << t.name;
  }
}

TEST(SynthPlan, Qwen3_8bQ4KHistogramAsInAnchor) {
  const Plan p = preset_plan("qwen3-8b", Mix::Q4_K_M);
  const auto h = p.type_histogram();
  EXPECT_EQ(h.at("Q4_K"), 217u);
  EXPECT_EQ(h.at("Q6_K"), 37u);
  EXPECT_EQ(h.at("F32"), 145u);
  EXPECT_EQ(h.size(), 3u);
  for (const auto& t : p.tensors) {
    if (t.name == "output.weight") { EXPECT_EQ(t.type, QType::Q6_K); }
    if (t.name == "token_embd.weight") { EXPECT_EQ(t.type, QType::Q4_K); }
  }
}

// llama-bench model_size (sum of tensor data bytes) of the anchor files.
TEST(SynthPlan, TensorBytesEqualLlamaBenchModelSize) {
  EXPECT_EQ(preset_plan("qwen3-8b", Mix::Q4_K_M).tensor_bytes(), 5021827072ull);
  EXPECT_EQ(preset_plan("qwen3-8b", Mix::Q8_0).tensor_bytes(), 8703561728ull);
  EXPECT_EQ(preset_plan("qwen3-8b", Mix::Q4_0).tensor_bytes(), 4768792576ull);
  EXPECT_EQ(preset_plan("qwen3-8b", Mix::F16).tensor_bytes(), 16382087168ull);
  EXPECT_EQ(preset_plan("llama3-8b", Mix::Q4_K_M).tensor_bytes(), 4912898048ull);
}

// The anchor's other files are only known by file size (tensor data + header). The header of
// these files is ~4.5 MB (the 151936-token vocabulary), so the tensor data must be a little less
// than the file and within 5 MB of it.
TEST(SynthPlan, LargerPresetsWithinHeaderOfAnchorFileSizes) {
  auto check = [](std::string_view preset, Mix m, uint64_t file_bytes) {
    const uint64_t b = preset_plan(preset, m).tensor_bytes();
    EXPECT_LT(b, file_bytes) << preset;
    EXPECT_LT(file_bytes - b, 5000000ull) << preset;
  };
  check("qwen3-32b", Mix::Q4_K_M, 19760675200ull);
  check("qwen3-30b-a3b", Mix::Q4_K_M, 18555212032ull);
  check("qwen3-30b-a3b", Mix::Q8_0, 32482457856ull);
}

TEST(SynthPlan, Q4_0AndQ8_0Assignments) {
  for (const auto& t : preset_plan("qwen3-8b", Mix::Q4_0).tensors) {
    if (t.ne.size() == 1) { EXPECT_EQ(t.type, QType::F32) << t.name; }
    else if (t.name == "output.weight") { EXPECT_EQ(t.type, QType::Q6_K); }
    else { EXPECT_EQ(t.type, QType::Q4_0) << t.name; }
  }
  for (const auto& t : preset_plan("qwen3-8b", Mix::Q8_0).tensors)
    EXPECT_EQ(t.type, t.ne.size() == 1 ? QType::F32 : QType::Q8_0) << t.name;
}

TEST(SynthPlan, MoeNamesShapesAndRouter) {
  const Plan p = preset_plan("qwen3-30b-a3b", Mix::Q4_K_M);
  const auto find = [&](const std::string& n) -> const TensorPlan& {
    for (const auto& t : p.tensors)
      if (t.name == n) return t;
    throw Error("missing " + n);
  };
  EXPECT_EQ(find("blk.0.ffn_gate_inp.weight").ne, (std::vector<uint64_t>{2048, 128}));
  EXPECT_EQ(find("blk.0.ffn_gate_inp.weight").type, QType::F32);
  EXPECT_EQ(find("blk.0.ffn_gate_exps.weight").ne, (std::vector<uint64_t>{2048, 768, 128}));
  EXPECT_EQ(find("blk.0.ffn_up_exps.weight").ne, (std::vector<uint64_t>{2048, 768, 128}));
  EXPECT_EQ(find("blk.0.ffn_down_exps.weight").ne, (std::vector<uint64_t>{768, 2048, 128}));
  EXPECT_EQ(find("blk.0.ffn_down_exps.weight").type, QType::Q6_K);  // layer 0 < 48/8
  EXPECT_EQ(find("blk.6.ffn_down_exps.weight").type, QType::Q4_K);  // (6-6)%3 != 2
  EXPECT_EQ(find("blk.8.ffn_down_exps.weight").type, QType::Q6_K);  // (8-6)%3 == 2
  EXPECT_EQ(find("blk.47.attn_v.weight").type, QType::Q6_K);
  EXPECT_EQ(find("blk.5.attn_q_norm.weight").ne, (std::vector<uint64_t>{128}));
  for (const auto& t : p.tensors) { EXPECT_EQ(t.name.find("ffn_gate.weight"), std::string::npos); }
}

// Shapes + the mixes we add beyond the anchors.
TEST(SynthPlan, OtherMixes) {
  const Plan q6 = preset_plan("llama3-8b", Mix::Q6_K);
  for (const auto& t : q6.tensors) { EXPECT_EQ(t.type, t.ne.size() == 1 ? QType::F32 : QType::Q6_K) << t.name; }

  // IQ4_XS: attn_v Q5_K (GQA 4), ffn_down Q5_K on the first eighth of the layers, output Q6_K.
  for (const auto& t : preset_plan("qwen3-8b", Mix::IQ4_XS).tensors) {
    if (t.ne.size() == 1) continue;
    QType want = QType::IQ4_XS;
    if (t.name == "output.weight") want = QType::Q6_K;
    else if (t.name.find("attn_v") != std::string::npos) want = QType::Q5_K;
    else if (t.name.find("ffn_down") != std::string::npos && std::stoi(t.name.substr(4)) < 4) want = QType::Q5_K;
    EXPECT_EQ(t.type, want) << t.name;
  }

  // Q5_K_M: llama.cpp's Q4_K_M rules with Q5_K as the default type (attn_v and ffn_down Q6_K on
  // the use-more-bits layers, output Q6_K), so tensor for tensor the Q4_K_M plan with Q4_K -> Q5_K.
  for (const char* preset : {"qwen3-8b", "llama3-8b", "qwen3-32b"}) {
    const Plan q4 = preset_plan(preset, Mix::Q4_K_M), q5 = preset_plan(preset, Mix::Q5_K_M);
    ASSERT_EQ(q4.tensors.size(), q5.tensors.size());
    for (size_t i = 0; i < q4.tensors.size(); ++i) {
      EXPECT_EQ(q5.tensors[i].name, q4.tensors[i].name);
      EXPECT_EQ(q5.tensors[i].type, q4.tensors[i].type == QType::Q4_K ? QType::Q5_K : q4.tensors[i].type)
          << preset << " " << q5.tensors[i].name;
    }
  }
  EXPECT_EQ(preset_plan("qwen3-8b", Mix::Q5_K_M).type_histogram().at("Q6_K"), 37u);
  EXPECT_EQ(mix_file_type(Mix::Q5_K_M), 17u);  // LLAMA_FTYPE_MOSTLY_Q5_K_M

  const Plan nv = preset_plan("qwen3-8b", Mix::NVFP4);
  for (const auto& t : nv.tensors)
    if (t.ne.size() > 1) { EXPECT_EQ(t.type, t.name == "output.weight" ? QType::Q8_0 : QType::NVFP4) << t.name; }

  const Plan f8 = preset_plan("qwen3-30b-a3b", Mix::FP8);
  size_t weights = 0, grids = 0;
  for (size_t i = 0; i < f8.tensors.size(); ++i) {
    const auto& t = f8.tensors[i];
    if (t.type == QType::FP8_E4M3) {
      ++weights;
      ASSERT_LT(i + 1, f8.tensors.size());
      const auto& g = f8.tensors[i + 1];
      EXPECT_EQ(g.name, t.name + ".scale_grid");
      EXPECT_EQ(g.type, QType::F32);
      EXPECT_EQ(g.ne[0], (t.ne[0] + 127) / 128);
      EXPECT_EQ(g.ne[1], (t.ne[1] + 127) / 128);
      if (t.ne.size() == 3) { EXPECT_EQ(g.ne[2], t.ne[2]); }
    }
    if (t.init == Init::ScaleGrid) ++grids;
  }
  EXPECT_EQ(weights, 2u + 48u * 7u);
  EXPECT_EQ(grids, weights);
  // FP8 bytes: one byte per weight plus 4 per 128x128 block (exact count from the shapes).
  uint64_t want = 0;
  for (const auto& t : f8.tensors) want += t.type == QType::FP8_E4M3 ? t.n_elements() : 4 * t.n_elements();
  EXPECT_EQ(f8.tensor_bytes(), want);
}

// llama.cpp falls back when a row does not fit the block: Q4_K -> Q5_0, Q6_K -> Q8_0.
TEST(SynthPlan, FallbackForRowsNotMultipleOf256) {
  Dims d = find_preset("qwen3-8b-tiny").dims;
  set_dim(d, "n_ff", "800");
  const Plan p = make_plan(d, Mix::Q4_K_M);
  for (const auto& t : p.tensors) {
    if (t.name == "blk.0.ffn_down.weight") { EXPECT_EQ(t.type, QType::Q8_0); }  // would be Q6_K
    if (t.name == "blk.1.ffn_down.weight") { EXPECT_EQ(t.type, QType::Q5_0); }  // would be Q4_K
    if (t.name == "blk.1.ffn_up.weight") { EXPECT_EQ(t.type, QType::Q4_K); }    // rows of 256
  }
  EXPECT_THROW(make_plan([&] { Dims e = d; set_dim(e, "n_ff", "96"); return e; }(), Mix::NVFP4), Error);
}

TEST(SynthPlan, Errors) {
  EXPECT_THROW(find_preset("qwen9"), Error);
  EXPECT_THROW(mix_from_name("q3_k_m"), Error);
  Dims d = find_preset("llama3-8b-tiny").dims;
  EXPECT_THROW(set_dim(d, "n_bogus", "1"), Error);
  EXPECT_THROW(set_dim(d, "n_embd", "12x"), Error);
  EXPECT_THROW(set_dim(d, "rope_freq_base", "fast"), Error);
  EXPECT_THROW(set_dim(d, "qk_norm", "maybe"), Error);
  set_dim(d, "n_head_kv", "3");  // 8 heads are not a multiple of 3
  EXPECT_THROW(make_plan(d, Mix::F16), Error);
  d = find_preset("llama3-8b-tiny").dims;
  set_dim(d, "n_vocab", "300");  // 768 regular + 256 specials do not fit
  EXPECT_THROW(make_plan(d, Mix::F16), Error);
  try {
    set_dim(d, "n_layers", "4");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n_layers"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("n_layer,"), std::string::npos) << "lists the known keys";
  }
}

TEST(SynthPlan, OverridesChangeShapes) {
  Dims d = find_preset("qwen3-32b").dims;
  set_dim(d, "n_layer", "2");
  set_dim(d, "n_vocab", "200000");
  set_dim(d, "tied_output", "true");
  const Plan p = make_plan(d, Mix::Q4_K_M);
  EXPECT_EQ(p.tensors.size(), 2u + 2u * 11u);
  EXPECT_EQ(p.tensors[0].name, "output_norm.weight");
  EXPECT_EQ(p.tensors[1].name, "token_embd.weight");
  EXPECT_EQ(p.tensors[1].ne, (std::vector<uint64_t>{5120, 200000}));
  EXPECT_EQ(p.tensors[1].type, QType::Q6_K) << "tied embeddings take the output rule";
}

// The tiny llama-quantize outputs in shared/models/synth exercise rules the big presets do not:
// tied embeddings (qwen3) and llama.cpp's exactly-8-experts special case (qwen3moe).
TEST(SynthPlan, MatchesLlamaQuantizeTinyFiles) {
  const std::string dir = kShared + "/models/synth";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "shared models not present: " << dir;
  for (const char* file : {"llama-q4_k_m.gguf", "qwen3-q4_k_m.gguf", "qwen3moe-q4_k_m.gguf",
                           "llama-q8_0.gguf", "qwen3-q8_0.gguf", "qwen3moe-q8_0.gguf"}) {
    SCOPED_TRACE(file);
    const auto f = gguf::File::open(dir + "/" + file);
    const std::string arch = f.get_string("general.architecture");
    Dims d = find_preset(arch == "llama" ? "llama3-8b-tiny" : arch == "qwen3" ? "qwen3-8b-tiny" : "qwen3-30b-a3b-tiny").dims;
    d.n_embd = (uint64_t)f.get_int(arch + ".embedding_length");
    d.n_layer = (uint64_t)f.get_int(arch + ".block_count");
    d.n_head = (uint64_t)f.get_int(arch + ".attention.head_count");
    d.n_head_kv = (uint64_t)f.get_int(arch + ".attention.head_count_kv");
    d.head_dim = (uint64_t)f.find_int(arch + ".attention.key_length").value_or((int64_t)(d.n_embd / d.n_head));
    d.n_ff = (uint64_t)f.find_int(arch + ".feed_forward_length").value_or(768);
    d.n_vocab = f.get_string_array("tokenizer.ggml.tokens").size();
    d.n_regular_tokens = 256;
    d.tied_output = f.find_tensor("output.weight") == nullptr;
    if (arch == "qwen3moe") {
      d.n_expert = (uint64_t)f.get_int(arch + ".expert_count");
      d.n_expert_used = (uint64_t)f.get_int(arch + ".expert_used_count");
      d.n_ff_exp = f.tensor("blk.0.ffn_gate_exps.weight").ne[1];
    }
    const Plan p = make_plan(d, std::string(file).find("q4_k_m") != std::string::npos ? Mix::Q4_K_M : Mix::Q8_0);
    ASSERT_EQ(p.tensors.size(), f.tensors().size());
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      const auto& want = f.tensors()[i];
      EXPECT_EQ(p.tensors[i].name, want.name) << i;
      EXPECT_EQ(p.tensors[i].ne, want.ne) << want.name;
      EXPECT_EQ(qtype_name(p.tensors[i].type), qtype_name(want.type)) << want.name;
    }
    EXPECT_EQ(p.tensor_bytes(), f.tensor_bytes());
  }
}

TEST(SynthPlan, FormatPlanListsTotals) {
  const Plan p = preset_plan("qwen3-8b", Mix::Q4_K_M);
  const std::string s = format_plan(p);
  EXPECT_NE(s.find("blk.35.ffn_up.weight"), std::string::npos);
  EXPECT_NE(s.find("5021827072 bytes"), std::string::npos);
  EXPECT_NE(s.find("Q6_K x37"), std::string::npos);
}
