// Synthetic BPE vocabulary: sizes and special ids of the real tokenizers, GPT-2 byte mapping,
// and merge consistency (every merge joins two tokens that exist earlier in the list).
#include <gtest/gtest.h>

#include <unordered_map>

#include "synth/plan.h"
#include "synth/rng.h"
#include "synth/vocab.h"

using namespace memra::synth;

TEST(SynthVocab, ByteTokensFollowGpt2Mapping) {
  EXPECT_EQ(byte_token('A'), "A");
  EXPECT_EQ(byte_token('!'), "!");
  EXPECT_EQ(byte_token(0), "\xC4\x80");     // U+0100 'Ā'
  EXPECT_EQ(byte_token(' '), "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(byte_token('\n'), "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(byte_token(0xAD), "\xC5\x83");  // soft hyphen, the last unprintable: U+0143 'Ń'
  EXPECT_EQ(byte_token(0xFF), "\xC3\xBF");  // 'ÿ' maps to itself
}

void check_consistent(const Vocab& v, uint64_t n_regular) {
  std::unordered_map<std::string, uint32_t> id;
  for (uint32_t i = 0; i < v.tokens.size(); ++i) {
    ASSERT_TRUE(id.emplace(v.tokens[i], i).second) << "duplicate token " << v.tokens[i];
  }
  ASSERT_EQ(v.merges.size(), n_regular - 256);
  for (size_t k = 0; k < v.merges.size(); ++k) {
    const std::string& m = v.merges[k];
    const size_t sp = m.find(' ');
    ASSERT_NE(sp, std::string::npos);
    ASSERT_EQ(m.find(' ', sp + 1), std::string::npos) << "one space per merge: " << m;
    const std::string l = m.substr(0, sp), r = m.substr(sp + 1);
    ASSERT_TRUE(id.count(l) && id.count(r)) << m;
    EXPECT_LT(id[l], 256 + k) << m;
    EXPECT_LT(id[r], 256 + k) << m;
    ASSERT_EQ(v.tokens[256 + k], l + r) << "merge rank k creates token 256+k";
  }
}

TEST(SynthVocab, QwenFullSize) {
  const Dims& d = find_preset("qwen3-8b").dims;
  const Vocab v = make_vocab(d, 1234);
  ASSERT_EQ(v.tokens.size(), 151936u);
  ASSERT_EQ(v.types.size(), 151936u);
  EXPECT_EQ(v.merges.size(), 151387u);  // as in the anchor file
  EXPECT_EQ(v.tokens[151643], "<|endoftext|>");
  EXPECT_EQ(v.tokens[151644], "<|im_start|>");
  EXPECT_EQ(v.tokens[151645], "<|im_end|>");
  EXPECT_EQ(v.tokens[151664], "<|file_sep|>");
  EXPECT_EQ(v.tokens[151665], "[PAD0]");
  EXPECT_EQ(v.bos, 151643u);
  EXPECT_EQ(v.eos, 151645u);
  EXPECT_EQ(v.pad, 151643u);
  EXPECT_FALSE(v.add_bos);
  size_t normal = 0, control = 0, unused = 0;
  for (auto t : v.types) {
    normal += t == kTokNormal;
    control += t == kTokControl;
    unused += t == kTokUnused;
  }
  EXPECT_EQ(normal, 151643u);
  EXPECT_EQ(control, 22u);
  EXPECT_EQ(unused, 151936u - 151643u - 22u);
  check_consistent(v, 151643);
}

TEST(SynthVocab, Llama3FullSize) {
  const Vocab v = make_vocab(find_preset("llama3-8b").dims, 7);
  ASSERT_EQ(v.tokens.size(), 128256u);
  EXPECT_EQ(v.tokens[128000], "<|begin_of_text|>");
  EXPECT_EQ(v.tokens[128001], "<|end_of_text|>");
  EXPECT_EQ(v.tokens[128006], "<|start_header_id|>");
  EXPECT_EQ(v.tokens[128007], "<|end_header_id|>");
  EXPECT_EQ(v.tokens[128009], "<|eot_id|>");
  EXPECT_EQ(v.tokens[128255], "<|reserved_special_token_250|>");
  EXPECT_EQ(v.bos, 128000u);
  EXPECT_EQ(v.eos, 128009u);
  EXPECT_TRUE(v.add_bos);
  check_consistent(v, 128000);
}

TEST(SynthVocab, DeterministicInSeed) {
  const Dims& d = find_preset("qwen3-8b-tiny").dims;
  const Vocab a = make_vocab(d, 1), b = make_vocab(d, 1), c = make_vocab(d, 2);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.merges, b.merges);
  EXPECT_NE(a.merges, c.merges);
  ASSERT_EQ(a.tokens.size(), 1024u);
  check_consistent(a, d.n_regular_tokens);
}

// The weight generator: N(mean, 0.02) by its first two moments, and a pure function of the
// element index (any split into ranges gives the same values).
TEST(SynthRng, NormalMomentsAndSplitInvariance) {
  const CounterRng rng(1234, "blk.0.attn_q.weight");
  const size_t n = 1 << 20;
  std::vector<float> x(n);
  rng.fill_normal(0, n, 0.0f, 0.02f, x.data());
  double s = 0, s2 = 0, s4 = 0;
  for (float v : x) {
    s += v;
    s2 += (double)v * v;
  }
  const double mean = s / n, var = s2 / n - mean * mean;
  for (float v : x) s4 += std::pow((v - mean) / std::sqrt(var), 4);
  EXPECT_LT(std::abs(mean), 5 * 0.02 / std::sqrt((double)n));  // 5 sigma of the sample mean
  EXPECT_NEAR(std::sqrt(var), 0.02, 0.02 * 0.005);
  EXPECT_NEAR(s4 / n, 3.0, 0.05);  // kurtosis of a normal

  std::vector<float> y(n);
  size_t pos = 0;
  for (size_t len : {1, 2, 3, 1000, 77, 12345}) {
    rng.fill_normal(pos, len, 0.0f, 0.02f, y.data() + pos);
    pos += len;
  }
  rng.fill_normal(pos, n - pos, 0.0f, 0.02f, y.data() + pos);
  EXPECT_EQ(x, y);

  const CounterRng other(1234, "blk.0.attn_k.weight");
  std::vector<float> z(16);
  other.fill_normal(0, 16, 0.0f, 0.02f, z.data());
  EXPECT_NE(std::vector<float>(x.begin(), x.begin() + 16), z);
}
