#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "model/model.h"

namespace memra::model {

// One line per architecture. An explicit table rather than static self-registration: the
// modules are static libraries, and the linker would drop an object nothing references.
std::unique_ptr<Model> make_gemma3(std::shared_ptr<const gguf::File>, backend::Backend&);
std::unique_ptr<Model> make_gemma4(std::shared_ptr<const gguf::File>, backend::Backend&);
std::unique_ptr<Model> make_gpt_oss(std::shared_ptr<const gguf::File>, backend::Backend&);
std::unique_ptr<Model> make_llama(std::shared_ptr<const gguf::File>, backend::Backend&);
std::unique_ptr<Model> make_minimax_m3(std::shared_ptr<const gguf::File>, backend::Backend&);
std::unique_ptr<Model> make_qwen2(std::shared_ptr<const gguf::File>, backend::Backend&);
std::unique_ptr<Model> make_qwen3(std::shared_ptr<const gguf::File>, backend::Backend&);
std::unique_ptr<Model> make_qwen35(std::shared_ptr<const gguf::File>, backend::Backend&);
std::unique_ptr<Model> make_qwen35moe(std::shared_ptr<const gguf::File>, backend::Backend&);
std::unique_ptr<Model> make_qwen3moe(std::shared_ptr<const gguf::File>, backend::Backend&);
std::unique_ptr<Model> make_step35(std::shared_ptr<const gguf::File>, backend::Backend&);

namespace {
const std::map<std::string, ModelFactory>& registry() {
  static const std::map<std::string, ModelFactory> r = {
      {"gemma3", make_gemma3},
      {"gemma4", make_gemma4},
      {"gpt-oss", make_gpt_oss},
      {"llama", make_llama},
      {"minimax-m3", make_minimax_m3},
      {"qwen2", make_qwen2},
      {"qwen3", make_qwen3},
      {"qwen35", make_qwen35},
      {"qwen35moe", make_qwen35moe},
      {"qwen3moe", make_qwen3moe},
      {"step35", make_step35},
  };
  return r;
}
}  // namespace

int64_t Model::check_forward(int64_t n, bool all_logits, const backend::View& logits) const {
  MEMRA_CHECK(n > 0, "forward: empty batch");
  const int64_t n_out = all_logits ? n : 1;
  MEMRA_CHECK(logits.rows == n_out && logits.cols == hp_.n_vocab, "forward: logits view [{} x {}] must be [{} x {}]",
              logits.rows, logits.cols, n_out, hp_.n_vocab);
  return n_out;
}

std::vector<std::string> supported_architectures() {
  std::vector<std::string> v;
  for (const auto& [k, _] : registry()) v.push_back(k);
  return v;
}

std::unique_ptr<Model> load_model(std::shared_ptr<const gguf::File> file, backend::Backend& be) {
  MEMRA_CHECK(file, "load_model: no file");
  auto arch = file->find_string("general.architecture");
  MEMRA_CHECK(arch.has_value(), "model '{}': missing metadata key 'general.architecture'",
              file->path());
  const auto& r = registry();
  auto it = r.find(*arch);
  MEMRA_CHECK(it != r.end(), "model '{}': unknown architecture '{}' (supported: {})", file->path(),
              *arch, fmt::join(supported_architectures(), ", "));
  return it->second(std::move(file), be);
}

}  // namespace memra::model
