#include "chat/chat_template.h"

#include <chrono>

#include "chat/ast.h"
#include "chat/interp.h"
#include "core/error.h"

namespace memra::chat {

namespace {

// Jinja2's lexer normalizes \r\n and \r to \n and, with keep_trailing_newline=False, drops one
// trailing newline of the source.
std::string normalize_source(const std::string& src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source) : source_(normalize_source(source)) {
  root_ = parse_template(lex_template(source_, LexOptions{}), source_);
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::ordered_json& context, std::optional<std::int64_t> now_unix) const {
  MEMRA_CHECK(context.is_object(), "chat template: the render context must be a JSON object");
  const Value ctx = Value::from_json(context);
  const std::int64_t now =
      now_unix ? *now_unix
               : std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                     .count();
  return render_program(*root_, source_, ctx.entries(), now);
}

nlohmann::ordered_json chat_context(const std::vector<ChatMessage>& messages, const ChatOptions& options) {
  MEMRA_CHECK(options.variables.is_object(), "chat template: ChatOptions::variables must be a JSON object");
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) {
    MEMRA_CHECK(m.extra.is_object() || m.extra.is_null(),
                "chat template: ChatMessage::extra must be a JSON object (role '{}')", m.role);
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    j["role"] = m.role;
    j["content"] = m.content;
    if (m.extra.is_object())
      for (auto it = m.extra.begin(); it != m.extra.end(); ++it) j[it.key()] = it.value();
    msgs.push_back(std::move(j));
  }
  nlohmann::ordered_json ctx = options.variables;
  ctx["messages"] = std::move(msgs);
  ctx["add_generation_prompt"] = options.add_generation_prompt;
  ctx["bos_token"] = options.bos_token;
  ctx["eos_token"] = options.eos_token;
  return ctx;
}

std::string render_chat(const std::string& template_src, const std::vector<ChatMessage>& messages,
                        const ChatOptions& options) {
  return ChatTemplate(template_src).render(chat_context(messages, options), options.now_unix);
}

}  // namespace memra::chat
