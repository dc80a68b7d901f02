#include "options.h"

#include <sstream>

#include "core/error.h"

namespace memra::rungen {

void add_options(CLI::App& cli, Options& o) {
  gen::add_model_prompt_options(cli, o);
  cli.add_flag("--info", o.info, "print the file's metadata and tensor table and exit");
  gen::add_run_options(cli, o);
  gen::add_sampling_options(cli, o);

  cli.add_flag("--tokenize", o.tokenize, "print the prompt's token ids as a JSON array and exit");
  o.o_detokenize = cli.add_option("--detokenize", o.detokenize, "print the text of these ids (special tokens shown) and exit")
                       ->type_name("IDS");
  o.o_ids = cli.add_option("--ids", o.ids, "run these token ids (no BOS added) instead of a prompt")->type_name("IDS");
  cli.add_option("--logits-out", o.logits_out, "with --ids: write every position's logits, raw f32 LE [position][vocab]")
      ->type_name("FILE");
}

void apply_cli(const Options& o, Config& c) { gen::apply_cli(o, c); }

std::vector<int32_t> parse_id_list(const std::string& text, const std::string& flag) {
  std::string s = text;
  const auto first = s.find_first_not_of(" \t\n");
  const auto last = s.find_last_not_of(" \t\n");
  s = first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
  if (!s.empty() && s.front() == '[') {
    MEMRA_CHECK(s.back() == ']', "{}: unbalanced '[' in '{}'", flag, text);
    s = s.substr(1, s.size() - 2);
  }
  std::vector<int32_t> ids;
  if (s.find_first_not_of(" \t\n") == std::string::npos) return ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto b = item.find_first_not_of(" \t\n");
    const auto e = item.find_last_not_of(" \t\n");
    const std::string t = b == std::string::npos ? std::string() : item.substr(b, e - b + 1);
    MEMRA_CHECK(!t.empty(), "{}: empty item in id list '{}'", flag, text);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    MEMRA_CHECK(used == t.size() && v >= INT32_MIN && v <= INT32_MAX, "{}: bad token id '{}' (ids are integers)", flag, t);
    ids.push_back((int32_t)v);
  }
  return ids;
}

void check_ids(const std::vector<int32_t>& ids, int64_t n_vocab, const std::string& flag) {
  for (size_t i = 0; i < ids.size(); ++i)
    MEMRA_CHECK(ids[i] >= 0 && ids[i] < n_vocab,
                "{}: bad token id {} at index {}: the vocabulary has {} tokens (ids 0..{})", flag, ids[i], i,
                n_vocab, n_vocab - 1);
}

}  // namespace memra::rungen
