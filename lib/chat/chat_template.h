#pragma once
// Chat templates: renders a GGUF's tokenizer.chat_template (a Jinja2 template) into the prompt text.
//
// The interpreter implements the Jinja2 subset real model templates use (ChatML/Qwen2.5/Qwen3,
// Llama 3.x, Gemma 2/3, SmolLM2, GPT-OSS style macros): {{ }}, {% %}, {# #}, whitespace control,
// if/elif/else, for (loop.*, else, inline if filter), set (incl. namespace attributes and block set),
// macros, break/continue, filters, tests, Python str/dict methods, slicing, raise_exception and
// strftime_now. Anything else fails with a memra::Error that names the construct and its line and
// column: an unsupported template never yields a silently different prompt.
//
// Semantics follow the environment transformers' apply_chat_template uses (trim_blocks=True,
// lstrip_blocks=True, loop controls, `tojson` = json.dumps(ensure_ascii=False)), so rendering equals
// what the model saw in training. The tests compare against Python's Jinja2 (tests/chat).
//
// Known limits (each fails loudly unless noted): printf-style `'%s' % x`; {% call %}, {% filter %},
// {% with %}, include/import/extends, HF's {% generation %}; macro varargs/caller; non-string dict
// keys; integers beyond int64. Silent differences, none reachable by real chat templates: case
// mapping (upper/lower/title/capitalize) is ASCII-only; printing a generator or dict view (e.g.
// `{{ xs | map('upper') }}` without `| list`) shows the list where Python shows an object repr;
// strftime_now() formats UTC time with the C locale.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace memra::chat {

struct Node;

struct ChatMessage {
  std::string role;
  std::string content;
  // Further message fields the template may read (tool_calls, reasoning_content, ...). Keys here
  // override role/content when they collide (e.g. a non-string "content" for multimodal parts).
  // null is treated as empty.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

struct ChatOptions {
  bool add_generation_prompt = true;
  std::string bos_token;
  std::string eos_token;
  // Extra template variables (tools, enable_thinking, date_string, builtin_tools, ...).
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  // Clock for strftime_now(), in UTC seconds since the epoch; unset = the current time.
  std::optional<std::int64_t> now_unix;
};

class ChatTemplate {
 public:
  // Parses the template; throws memra::Error naming the position of a syntax error or an
  // unsupported statement.
  explicit ChatTemplate(std::string source);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // `context` must be a JSON object; its keys become template variables.
  std::string render(const nlohmann::ordered_json& context, std::optional<std::int64_t> now_unix = std::nullopt) const;

 private:
  std::string source_;  // newline-normalized, as positions in errors refer to it
  std::unique_ptr<Node> root_;
};

// The context apply_chat_template builds: messages, add_generation_prompt, bos_token, eos_token,
// plus options.variables.
nlohmann::ordered_json chat_context(const std::vector<ChatMessage>& messages, const ChatOptions& options);

std::string render_chat(const std::string& template_src, const std::vector<ChatMessage>& messages,
                        const ChatOptions& options);

}  // namespace memra::chat
