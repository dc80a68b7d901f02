// The two merge algorithms, with llama.cpp's tie-breaking so the ids agree exactly:
// SPM merges the adjacent pair whose joined text is the highest-scoring token (leftmost on
// ties); BPE merges the adjacent pair with the lowest merge rank (leftmost on ties).
#include <algorithm>
#include <queue>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace memra::tok {

namespace {

struct Symbol {
  int prev, next;
  size_t off, n;
};

std::vector<Symbol> split_chars(std::string_view text) {
  std::vector<Symbol> syms;
  size_t off = 0;
  int index = 0;
  while (off < text.size()) {
    const size_t len = std::min(utf8_len(static_cast<uint8_t>(text[off])), text.size() - off);
    syms.push_back({index - 1, off + len == text.size() ? -1 : index + 1, off, len});
    off += len;
    ++index;
  }
  return syms;
}

}  // namespace

std::string merge_key(std::string_view left, std::string_view right) {
  // length-prefixed so that no pair of strings can collide
  std::string k;
  k.reserve(left.size() + right.size() + 4);
  const auto n = static_cast<uint32_t>(left.size());
  k.push_back(static_cast<char>(n & 0xFF));
  k.push_back(static_cast<char>((n >> 8) & 0xFF));
  k.push_back(static_cast<char>((n >> 16) & 0xFF));
  k.append(left);
  k.append(right);
  return k;
}

int32_t Tokenizer::Impl::spm_byte_token(uint8_t b) const {
  static const char* hex = "0123456789ABCDEF";
  const char buf[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
  int32_t id = find(std::string_view(buf, 6));
  if (id == kNoToken) id = find(std::string_view(reinterpret_cast<const char*>(&b), 1));
  // llama.cpp aborts here; the unknown token is the graceful equivalent
  return id == kNoToken ? info.unk : id;
}

namespace {

void spm_tokenize_chunk(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out) {
  std::vector<Symbol> syms = split_chars(text);
  struct Bigram {
    int left, right;
    float score;
    size_t size;
  };
  auto lower = [](const Bigram& a, const Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(lower)> queue(lower);

  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view s = text.substr(syms[left].off, syms[left].n + syms[right].n);
    const int32_t id = v.find(s);
    if (id == kNoToken) return;
    queue.push({left, right, v.score[id], s.size()});
  };
  for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = syms[b.left];
    Symbol& r = syms[b.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  // Every merged symbol is a token (a bigram is only queued when its text is one). A symbol
  // that was never merged is one UTF-8 character; when it is not a token it falls back to byte
  // tokens. (llama.cpp also keeps a "reverse merge" map for re-splitting, but a bigram's text
  // is always longer than any single character starting with the same byte, so that map can
  // never be hit and is left out.)
  for (int i = syms.empty() ? -1 : 0; i != -1; i = syms[i].next) {
    const std::string_view str = text.substr(syms[i].off, syms[i].n);
    const int32_t id = v.find(str);
    if (id != kNoToken) {
      out.push_back(id);
      continue;
    }
    for (char c : str) out.push_back(v.spm_byte_token(static_cast<uint8_t>(c)));
  }
}

}  // namespace

// When no token has a U+2581 after a non-U+2581 character (true of every SPM vocabulary we
// have), no bigram can span the start of a "▁..." run, so the text splits there into chunks
// whose merges are independent: the result is identical and the merge queues stay small
// (one queue over a 1 MB text is cache-bound: 0.38 MB/s measured, see bench_tokenizer).
void spm_tokenize(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out) {
  if (!v.spm_chunkable) {
    spm_tokenize_chunk(v, text, out);
    return;
  }
  // Boundaries are taken on the character walk spm_tokenize_chunk itself does, so each chunk
  // splits into exactly the symbols it had in the whole text (this matters for invalid UTF-8).
  constexpr std::string_view kSpace = "\xe2\x96\x81";
  size_t start = 0;
  bool prev_space = false;
  for (size_t off = 0; off < text.size();) {
    const size_t len = std::min(utf8_len(static_cast<uint8_t>(text[off])), text.size() - off);
    const bool space = text.substr(off, len) == kSpace;
    if (space && !prev_space && off > start) {
      spm_tokenize_chunk(v, text.substr(start, off - start), out);
      start = off;
    }
    prev_space = space;
    off += len;
  }
  spm_tokenize_chunk(v, text.substr(start), out);
}

void bpe_tokenize(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out) {
  struct Sym {
    int prev, next;
    size_t off, n;
    int32_t id;
  };
  struct Bigram {
    int left, right;
    int32_t rank, merged;
    size_t size;
  };
  auto lower = [](const Bigram& a, const Bigram& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  };
  std::vector<Sym> syms;
  std::vector<Bigram> heap_storage;
  std::string word;

  for (const std::string& raw_word : v.pre->split(text)) {
    word.clear();
    for (char c : raw_word) word += byte_to_unicode(static_cast<uint8_t>(c));
    if (word.empty()) continue;
    const std::string_view w(word);

    if (v.ignore_merges) {
      const int32_t id = v.find(w);
      if (id != kNoToken) {
        out.push_back(id);
        continue;
      }
    }
    // one symbol per input byte: its byte-unicode character (a whole UTF-8 sequence of `word`)
    syms.clear();
    size_t off = 0;
    const int nb = static_cast<int>(raw_word.size());
    for (int i = 0; i < nb; ++i) {
      const auto b = static_cast<uint8_t>(raw_word[i]);
      const size_t len = byte_to_unicode(b).size();
      syms.push_back({i - 1, i + 1 < nb ? i + 1 : -1, off, len, v.byte_id[b]});
      off += len;
    }
    heap_storage.clear();
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(lower)> queue(lower, std::move(heap_storage));
    auto add = [&](int left, int right) {
      if (left < 0 || right < 0) return;
      const Sym& l = syms[left];
      const Sym& r = syms[right];
      if (v.merges_by_id) {
        if (l.id == kNoToken || r.id == kNoToken) return;
        const auto it = v.merge_id.find((uint64_t(uint32_t(l.id)) << 32) | uint32_t(r.id));
        if (it == v.merge_id.end()) return;
        queue.push({left, right, it->second.rank, it->second.merged, l.n + r.n});
      } else {
        const auto it = v.merge_rank.find(merge_key(w.substr(l.off, l.n), w.substr(r.off, r.n)));
        if (it == v.merge_rank.end()) return;
        queue.push({left, right, it->second, kNoToken, l.n + r.n});
      }
    };
    for (int i = 1; i < static_cast<int>(syms.size()); ++i) add(i - 1, i);

    while (!queue.empty()) {
      const Bigram b = queue.top();
      queue.pop();
      Sym& l = syms[b.left];
      Sym& r = syms[b.right];
      // Stale when either side was merged away or grew: a left symbol only grows by absorbing
      // its right neighbour, so equal total length means the same two texts as when queued.
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
      l.n += r.n;
      l.id = v.merges_by_id ? b.merged : v.find(w.substr(l.off, l.n));
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) syms[r.next].prev = b.left;
      add(l.prev, b.left);
      add(b.left, l.next);
    }
    for (const Sym& s : syms) {
      if (s.n == 0) continue;
      if (s.id != kNoToken) {
        out.push_back(s.id);
        continue;
      }
      // no token for the text: fall back to single raw bytes that happen to be tokens
      for (char c : w.substr(s.off, s.n)) {
        const int32_t id = v.find(std::string_view(&c, 1));
        if (id != kNoToken) out.push_back(id);
      }
    }
  }
}

}  // namespace memra::tok
