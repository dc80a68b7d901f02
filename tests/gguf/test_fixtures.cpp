// Every GGUF under ../shared/models opens, validates, describes and rewrites byte-identically;
// metadata matches what PROVENANCE.md and synth/README.md (read independently with Python's
// standard library) record.
#include <algorithm>
#include <regex>
#include <sstream>

#include "gguf/writer.h"
#include "helpers.h"

using namespace memra;
using namespace memra::gguf;
using namespace memra::gguf::test;

namespace {

std::vector<fs::path> shared_ggufs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(shared_dir() / "models"))
    if (e.is_regular_file() && e.path().extension() == ".gguf") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

#define SKIP_WITHOUT_SHARED()                                                         \
  if (!fs::exists(shared_dir() / "models"))                                           \
  GTEST_SKIP() << "shared fixtures not found at " << shared_dir() << "/models (MEMRA_SHARED_DIR)"

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "F16 x5, F32 x11, Q4_0 x31" -> {F16:5, F32:11, Q4_0:31}
std::map<std::string, uint64_t> parse_mix(const std::string& s) {
  std::map<std::string, uint64_t> m;
  static const std::regex re(R"(([A-Z0-9_]+) x(\d+))");
  for (std::sregex_iterator it(s.begin(), s.end(), re), end; it != end; ++it)
    m[(*it)[1]] = std::stoull((*it)[2]);
  return m;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  return s;
}

}  // namespace

TEST(GgufFixtures, EveryModelOpensValidatesAndDescribes) {
  SKIP_WITHOUT_SHARED();
  const auto files = shared_ggufs();
  // 5 models + 12 vocab files + 19 synth files are listed in the PROVENANCE/README files.
  EXPECT_GE(files.size(), 36u);
  for (const auto& p : files) {
    SCOPED_TRACE(p.string());
    File f = File::open(p.string());
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.file_size(), fs::file_size(p));
    EXPECT_FALSE(f.get_string("general.architecture").empty());
    for (const auto& t : f.tensors()) {
      const uint8_t* d = f.tensor_data(t);
      const uint8_t* base = f.tensor_data(f.tensors().front()) - f.tensors().front().offset;
      EXPECT_GE(d, base);
      EXPECT_LE((uint64_t)(d - base) + f.data_offset() + t.n_bytes, f.file_size());
      EXPECT_EQ(t.n_bytes, *qtype_row_bytes(t.type, t.ne[0]) * t.rows());
    }
    const std::string s = describe(f);
    EXPECT_HAS(s, f.get_string("general.architecture"));
    EXPECT_HAS(s, fmt::format("{} tensors", f.tensors().size()));
    for (const auto& kv : f.metadata()) EXPECT_HAS(s, kv.key);
  }
}

TEST(GgufFixtures, RewriteIsByteIdentical) {
  SKIP_WITHOUT_SHARED();
  TempDir dir;
  for (const auto& p : shared_ggufs()) {
    SCOPED_TRACE(p.string());
    File f = File::open(p.string());
    const auto out = dir.file("rewrite.gguf");
    rewrite(f, out);
    const auto a = read_bytes(p.string());
    const auto b = read_bytes(out);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_TRUE(a == b) << "first difference at byte "
                        << (std::mismatch(a.begin(), a.end(), b.begin()).first - a.begin());
  }
}

// Hand-picked values from PROVENANCE.md, spelled out.
TEST(GgufFixtures, KnownValuesStories260K) {
  SKIP_WITHOUT_SHARED();
  File f = File::open((shared_dir() / "models/stories260K.gguf").string());
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("llama.embedding_length"), 64);
  EXPECT_EQ(f.get_int("llama.block_count"), 5);
  EXPECT_EQ(f.get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(f.get_int("llama.feed_forward_length"), 172);
  EXPECT_EQ(f.get_int("llama.context_length"), 2048);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), 512u);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f.tensors().size(), 48u);
  EXPECT_EQ(f.type_histogram(), (std::map<std::string, uint64_t>{{"F32", 48}}));
  EXPECT_EQ(f.file_size(), 1185376u);

  File q = File::open((shared_dir() / "models/stories260K-q4_0.gguf").string());
  EXPECT_EQ(q.type_histogram(),
            (std::map<std::string, uint64_t>{{"F16", 5}, {"F32", 11}, {"Q4_0", 31}, {"Q8_0", 1}}));
  EXPECT_EQ(q.get_int("general.file_type"), 2);
  EXPECT_EQ(q.tensor("output.weight").type, QType::Q8_0);

  File r = File::open((shared_dir() / "models/llama-2-tiny-random.gguf").string());
  EXPECT_EQ(r.get_int("llama.embedding_length"), 8);
  EXPECT_EQ(r.get_string("general.name"), "LLaMA v2");
  EXPECT_EQ(r.get_string_array("tokenizer.ggml.tokens").size(), 32000u);
  EXPECT_EQ(r.get_f32_array("tokenizer.ggml.scores").size(), 32000u);
  EXPECT_EQ(r.get_int_array("tokenizer.ggml.token_type").size(), 32000u);
  EXPECT_EQ(r.type_histogram(), (std::map<std::string, uint64_t>{{"F16", 9}, {"F32", 3}}));
}

// Every "- metadata:" line of PROVENANCE.md, checked field by field.
TEST(GgufFixtures, ProvenanceMetadataLines) {
  SKIP_WITHOUT_SHARED();
  const fs::path models = shared_dir() / "models";
  std::istringstream in(read_text(models / "PROVENANCE.md"));
  std::string line, current;
  int files_checked = 0, fields_checked = 0;
  static const std::regex head(R"(^### `([^`]+\.gguf)`)");
  static const std::regex size_re(R"(^- size: (\d+) bytes)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, head)) {
      current = m[1];
      continue;
    }
    if (current.empty()) continue;
    fs::path p = models / current;
    if (!fs::exists(p)) p = models / "vocab" / current;
    if (std::regex_search(line, m, size_re)) {
      EXPECT_EQ(fs::file_size(p), std::stoull(m[1])) << current;
      continue;
    }
    if (line.rfind("- metadata: ", 0) != 0) continue;
    SCOPED_TRACE(current);
    File f = File::open(p.string());
    ++files_checked;
    std::map<std::string, std::string> fields;
    std::string rest = line.substr(12);
    for (size_t pos = 0; pos < rest.size();) {
      size_t end = rest.find("; ", pos);
      if (end == std::string::npos) end = rest.size();
      const std::string item = rest.substr(pos, end - pos);
      const size_t eq = item.find('=');
      if (eq != std::string::npos) fields[trim(item.substr(0, eq))] = trim(item.substr(eq + 1));
      pos = end + 2;
    }
    const std::string arch = fields.at("architecture");
    EXPECT_EQ(f.get_string("general.architecture"), arch);
    auto check_int = [&](const char* field, const std::string& key) {
      if (!fields.count(field)) return;
      EXPECT_EQ(std::to_string(f.get_int(key)), fields[field]) << field << " -> " << key;
      ++fields_checked;
    };
    check_int("n_embd", arch + ".embedding_length");
    check_int("n_layer", arch + ".block_count");
    check_int("n_head", arch + ".attention.head_count");
    check_int("n_head_kv", arch + ".attention.head_count_kv");
    check_int("n_ff", arch + ".feed_forward_length");
    check_int("n_ctx_train", arch + ".context_length");
    check_int("rope_dim", arch + ".rope.dimension_count");
    EXPECT_EQ(f.get_string("general.name"), fields.at("general.name"));
    EXPECT_EQ(std::to_string(f.get_string_array("tokenizer.ggml.tokens").size()),
              fields.at("vocab size"));
    EXPECT_EQ(f.get_string("tokenizer.ggml.model"), fields.at("tokenizer.ggml.model"));
    const std::string pre = fields.at("tokenizer.ggml.pre");
    if (pre == "(absent)") EXPECT_EQ(f.find("tokenizer.ggml.pre"), nullptr);
    else EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), pre);
    const std::string be = fields.at("bos/eos");
    const std::string bos = be.substr(0, be.find('/')), eos = be.substr(be.find('/') + 1);
    auto check_id = [&](const std::string& want, const char* key) {
      if (want == "None") EXPECT_EQ(f.find(key), nullptr) << key;
      else EXPECT_EQ(std::to_string(f.get_int(key)), want) << key;
    };
    check_id(bos, "tokenizer.ggml.bos_token_id");
    check_id(eos, "tokenizer.ggml.eos_token_id");
    const std::string add = fields.at("add_bos/add_eos keys");
    auto check_flag = [&](const std::string& want, const char* key) {
      if (want == "(absent)") EXPECT_EQ(f.find(key), nullptr) << key;
      else EXPECT_EQ(f.get_bool(key) ? "True" : "False", want) << key;
    };
    check_flag(add.substr(0, add.find('/')), "tokenizer.ggml.add_bos_token");
    check_flag(add.substr(add.find('/') + 1), "tokenizer.ggml.add_eos_token");
    const std::string merges = fields.at("merges");
    if (merges == "(none)") EXPECT_EQ(f.find("tokenizer.ggml.merges"), nullptr);
    else EXPECT_EQ(std::to_string(f.get_string_array("tokenizer.ggml.merges").size()), merges);
    EXPECT_EQ(std::to_string(f.tensors().size()), fields.at("n_tensors"));
    const std::string types = fields.at("tensor types");
    if (f.tensors().empty()) EXPECT_HAS(types, "no tensors");
    else EXPECT_EQ(f.type_histogram(), parse_mix(types));
  }
  EXPECT_EQ(files_checked, 17);  // 5 models + 12 vocab files
  EXPECT_GT(fields_checked, 80);
}

// The file table of synth/README.md: architecture, size, tensor type mix.
TEST(GgufFixtures, SynthReadmeTable) {
  SKIP_WITHOUT_SHARED();
  const fs::path synth = shared_dir() / "models/synth";
  std::istringstream in(read_text(synth / "README.md"));
  std::string line;
  int rows = 0;
  static const std::regex row(
      R"(^\| `([^`]+\.gguf)` \| ([^|]+) \| [^|]+ \| [^|]+ \| (\d+) \| `[0-9a-f]+` \| ([^|]+) \|)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (!std::regex_search(line, m, row)) continue;
    SCOPED_TRACE(m[1].str());
    File f = File::open((synth / m[1].str()).string());
    EXPECT_EQ(f.get_string("general.architecture"), trim(m[2]));
    EXPECT_EQ(f.file_size(), std::stoull(m[3]));
    EXPECT_EQ(f.type_histogram(), parse_mix(m[4]));
    ++rows;
  }
  EXPECT_EQ(rows, 19);
}
