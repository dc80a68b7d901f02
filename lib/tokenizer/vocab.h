#pragma once
// Internal: the loaded vocabulary shared by tokenizer.cpp (loading, special tokens,
// detokenize) and merge.cpp (the SPM and BPE merge algorithms).
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"

namespace memra::tok {

struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringViewHash, std::equal_to<>>;

struct Tokenizer::Impl {
  TokenizerInfo info;
  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<uint32_t> attr;
  TokenMap to_id;
  // BPE merges. When both sides of every merge are vocabulary tokens (all real vocabularies)
  // they are keyed by token ids, which avoids building strings in the merge loop; otherwise by
  // merge_key(left, right) strings.
  struct Merge {
    int32_t rank;
    int32_t merged;  // id of left+right, kNoToken when that text is not a token
  };
  bool merges_by_id = false;
  std::unordered_map<uint64_t, Merge> merge_id;
  TokenMap merge_rank;
  // Special-token texts in a byte trie, to find which of them occur in a text in one pass.
  struct TrieNode {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    int32_t token = kNoToken;
  };
  std::vector<TrieNode> special_trie;
  std::unique_ptr<PreTokenizer> pre;
  bool ignore_merges = false;
  bool spm_chunkable = false;  // see spm_tokenize
  int32_t byte_id[256] = {};   // BPE: token of each byte's byte-unicode character
  std::set<int32_t> eog;
  std::vector<int32_t> special_order;  // special tokens, longest text first
  std::vector<std::string> piece;      // token_to_piece(id, render_special=true)

  int32_t find(std::string_view s) const {
    const auto it = to_id.find(s);
    return it == to_id.end() ? kNoToken : it->second;
  }
  int32_t spm_byte_token(uint8_t b) const;
  std::string make_piece(int32_t id) const;
  void check_id(int32_t id) const;
  void build_special_trie();
  // Marks in `present` (indexed by token id) the special tokens whose text occurs in `text`.
  void specials_in(std::string_view text, std::vector<uint8_t>& present) const;
};

std::string merge_key(std::string_view left, std::string_view right);

// Appends the ids of one raw-text fragment (no special-token handling here).
void spm_tokenize(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out);
void bpe_tokenize(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out);

}  // namespace memra::tok
