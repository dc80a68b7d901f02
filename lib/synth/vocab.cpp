#include "synth/vocab.h"

#include <tuple>
#include <unordered_set>

#include "core/error.h"
#include "synth/rng.h"

namespace memra::synth {
namespace {

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += (char)cp;
  } else if (cp < 0x800) {
    s += (char)(0xC0 | (cp >> 6));
    s += (char)(0x80 | (cp & 0x3F));
  } else {
    s += (char)(0xE0 | (cp >> 12));
    s += (char)(0x80 | ((cp >> 6) & 0x3F));
    s += (char)(0x80 | (cp & 0x3F));
  }
  return s;
}

bool printable_latin1(uint32_t b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174); }

}  // namespace

std::string byte_token(uint8_t b) {
  if (printable_latin1(b)) return utf8(b);
  uint32_t k = 0;
  for (uint32_t x = 0; x < b; ++x)
    if (!printable_latin1(x)) ++k;
  return utf8(256 + k);
}

Vocab make_vocab(const Dims& d, uint64_t seed) {
  validate(d);
  Vocab v;
  v.tokens.reserve(d.n_vocab);
  v.types.reserve(d.n_vocab);
  std::vector<uint8_t> n_bytes;  // bytes each regular token stands for, to bound token length
  n_bytes.reserve(d.n_regular_tokens);
  std::unordered_set<std::string> seen;
  seen.reserve(d.n_regular_tokens * 2);
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(byte_token((uint8_t)b));
    v.types.push_back(kTokNormal);
    n_bytes.push_back(1);
    seen.insert(v.tokens.back());
  }
  // Each merge joins two earlier tokens into a token not seen before. Later partners come from a pool
  // that starts with the printable ASCII bytes and grows with every new token, drawn with a bias
  // towards its front (u^2), so the early merges are ASCII bigrams and later ones build longer
  // pieces from them: English text then tokenizes to fewer tokens than bytes, as with a real
  // vocabulary. The other 161 bytes join a merge 1 time in 32. Pieces are capped at 16 bytes.
  std::vector<uint32_t> pool, rare;
  for (uint32_t b = 0; b < 256; ++b) (b >= 32 && b <= 126 ? pool : rare).push_back(b);
  CounterRng rng(seed, "tokenizer.merges");
  uint64_t counter = 0;
  v.merges.reserve(d.n_regular_tokens - 256);
  auto draw = [&](uint64_t r) -> uint32_t {
    const double u = (double)(r & 0xFFFFFFFFu) / 4294967296.0;
    if (((r >> 32) & 31) == 0) return rare[(size_t)(u * (double)rare.size())];
    return pool[(size_t)(u * u * (double)pool.size())];
  };
  // First every printable-ASCII bigram once, in a seeded shuffle (what a real vocabulary learns
  // first), then pairs drawn from the pool.
  std::vector<std::pair<uint32_t, uint32_t>> bigrams;
  for (uint32_t x = 32; x <= 126; ++x)
    for (uint32_t y = 32; y <= 126; ++y) bigrams.emplace_back(x, y);
  for (size_t i = bigrams.size() - 1; i > 0; --i) std::swap(bigrams[i], bigrams[rng.bits(counter++) % (i + 1)]);
  size_t next_bigram = 0;
  while (v.tokens.size() < d.n_regular_tokens) {
    uint32_t a, b;
    if (next_bigram < bigrams.size()) {
      std::tie(a, b) = bigrams[next_bigram++];
    } else {
      a = draw(rng.bits(counter++));
      b = draw(rng.bits(counter++));
    }
    MEMRA_CHECK(counter < 128 * d.n_regular_tokens + 1000000,
                "synth: could not build {} distinct merges", d.n_regular_tokens - 256);
    if (n_bytes[a] + n_bytes[b] > 16) continue;
    std::string joined = v.tokens[a] + v.tokens[b];
    if (!seen.insert(joined).second) continue;
    v.merges.push_back(v.tokens[a] + " " + v.tokens[b]);
    pool.push_back((uint32_t)v.tokens.size());
    v.tokens.push_back(std::move(joined));
    v.types.push_back(kTokNormal);
    n_bytes.push_back((uint8_t)(n_bytes[a] + n_bytes[b]));
  }
  const uint32_t first_special = (uint32_t)v.tokens.size();
  for (auto s : special_tokens(d.vocab)) {
    v.tokens.emplace_back(s);
    v.types.push_back(kTokControl);
  }
  for (uint64_t i = 0; v.tokens.size() < d.n_vocab; ++i) {
    v.tokens.push_back(fmt::format("[PAD{}]", i));
    v.types.push_back(kTokUnused);
  }
  if (d.vocab == VocabStyle::Qwen) {
    v.bos = first_special;      // <|endoftext|>
    v.eos = first_special + 2;  // <|im_end|>
    v.pad = first_special;
    v.add_bos = false;
  } else {
    v.bos = first_special;      // <|begin_of_text|>
    v.eos = first_special + 9;  // <|eot_id|>
    v.pad = first_special + 1;  // <|end_of_text|>
    v.add_bos = true;
  }
  return v;
}

}  // namespace memra::synth
