// Agreement with llama.cpp's own outputs (shared/reference, shared/models/vocab/*.inp|out).
#include <nlohmann/json.hpp>

#include "fixtures.h"

namespace memra::tok::test {
namespace {

using nlohmann::json;

bool is_wpm(const std::string& vocab_rel) { return vocab_rel.find("bert") != std::string::npos; }

TEST(TokenizerReference, TokenizeJsonlIdsAndDetokenized) {
  MEMRA_REQUIRE_SHARED();
  std::ifstream in(shared_dir() / "reference" / "tokenize.jsonl");
  ASSERT_TRUE(in) << "reference/tokenize.jsonl missing";
  std::string line;
  int checked = 0, id_fail = 0, detok_fail = 0;
  std::map<std::string, int> fails_by_vocab;
  while (std::getline(in, line)) {
    const json r = json::parse(line);
    const std::string v = r["vocab"];
    if (is_wpm(v)) continue;  // WPM/BERT is out of scope (issue 4)
    const Tokenizer& tok = vocab(v);
    const std::string text = r["text"];
    const auto expect = r["ids"].get<std::vector<int32_t>>();
    const auto got = tok.tokenize(text, r["add_bos"].get<bool>(), r["parse_special"].get<bool>());
    ++checked;
    if (got != expect) {
      ++id_fail;
      ++fails_by_vocab[v];
      ADD_FAILURE() << v << " text=" << json(text).dump() << " add_bos=" << r["add_bos"]
                    << " parse_special=" << r["parse_special"] << "\n  expected: " << ids_str(expect)
                    << "\n  got:      " << ids_str(got);
    }
    const std::string detok = tok.detokenize(expect, true);
    if (detok != r["detokenized"].get<std::string>()) {
      ++detok_fail;
      ADD_FAILURE() << v << " detokenize(" << ids_str(expect) << ")\n  expected: "
                    << r["detokenized"].dump() << "\n  got:      " << json(detok).dump();
    }
  }
  EXPECT_EQ(checked, 1568 - 112);
  EXPECT_EQ(id_fail, 0);
  EXPECT_EQ(detok_fail, 0);
  for (const auto& [v, n] : fails_by_vocab) std::cerr << "  " << v << ": " << n << " id mismatches\n";
}

// llama.cpp's test-tokenizer-0 vectors: add_special=false, parse_special=false.
class VocabVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabVectors, MatchesOut) {
  MEMRA_REQUIRE_SHARED();
  const std::string name = GetParam();
  const auto dir = shared_dir() / "models" / "vocab";
  const std::string inp = read_file(dir / (name + ".inp"));
  const std::string outp = read_file(dir / (name + ".out"));
  ASSERT_FALSE(inp.empty()) << name << ".inp missing";
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0;;) {
    const size_t hit = inp.find(sep, pos);
    if (hit == std::string::npos) break;
    texts.push_back(inp.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  std::vector<std::vector<int32_t>> expect;
  std::istringstream ls(outp);
  for (std::string l; std::getline(ls, l);) {
    std::istringstream is(l);
    std::vector<int32_t> ids;
    for (int32_t x; is >> x;) ids.push_back(x);
    expect.push_back(ids);
  }
  ASSERT_EQ(texts.size(), expect.size()) << name;
  const Tokenizer& tok = vocab("vocab/" + name);
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto got = tok.tokenize(texts[i], false, false);
    EXPECT_EQ(ids_str(got), ids_str(expect[i])) << name << " case " << i << " text=" << json(texts[i]).dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, VocabVectors,
                         ::testing::Values("ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf",
                                           "ggml-vocab-deepseek-coder.gguf", "ggml-vocab-deepseek-llm.gguf",
                                           "ggml-vocab-falcon.gguf", "ggml-vocab-gpt-2.gguf",
                                           "ggml-vocab-mpt.gguf", "ggml-vocab-refact.gguf",
                                           "ggml-vocab-starcoder.gguf"),
                         [](const auto& info) {
                           std::string n = info.param.substr(11, info.param.size() - 16);
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// generate.jsonl: prompt_ids = tokenize(prompt, add_special=true, parse_special=false) and
// generated_text = the concatenated token_to_piece(id, special=true) of generated_ids.
TEST(TokenizerReference, GeneratePromptsAndPieces) {
  MEMRA_REQUIRE_SHARED();
  std::ifstream in(shared_dir() / "reference" / "generate.jsonl");
  ASSERT_TRUE(in);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    const json r = json::parse(line);
    const Tokenizer& tok = vocab(r["model"].get<std::string>());
    EXPECT_EQ(ids_str(tok.tokenize(r["prompt"].get<std::string>(), true, false)),
              ids_str(r["prompt_ids"].get<std::vector<int32_t>>()))
        << r["model"] << " prompt=" << r["prompt"].dump();
    std::string text, streamed;
    StreamDecoder stream(tok, true, StreamDecoder::Mode::Pieces);
    for (int32_t id : r["generated_ids"].get<std::vector<int32_t>>()) {
      text += tok.token_to_piece(id, true);
      streamed += stream.push(id);
      EXPECT_EQ(tok.is_eog(id), id == tok.eos()) << id;
    }
    streamed += stream.flush();
    EXPECT_EQ(text, r["generated_text"].get<std::string>()) << r["model"] << " prompt=" << r["prompt"].dump();
    EXPECT_EQ(streamed, r["generated_text"].get<std::string>()) << r["model"] << " prompt=" << r["prompt"].dump();
    ++n;
  }
  EXPECT_EQ(n, 32);
}

TEST(TokenizerReference, ArchTokenizerExamples) {
  MEMRA_REQUIRE_SHARED();
  std::ifstream in(shared_dir() / "reference" / "arch" / "tokenizer_examples.jsonl");
  ASSERT_TRUE(in);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    const json r = json::parse(line);
    const Tokenizer& tok = vocab("synth/" + r["model_file"].get<std::string>());
    const auto expect = r["token_ids"].get<std::vector<int32_t>>();
    const auto got = tok.tokenize(r["text"].get<std::string>(), r["add_special"].get<bool>(),
                                  r["parse_special"].get<bool>());
    EXPECT_EQ(ids_str(got), ids_str(expect)) << r["vocab"] << " text=" << r["text"].dump();
    ++n;
  }
  EXPECT_EQ(n, 9);
}

}  // namespace
}  // namespace memra::tok::test
