// Real model chat templates rendered by memra::chat and by Python Jinja2 (the oracle) from the same
// messages must be byte-identical. Fixtures: tests/chat/templates (sources in SOURCES.md).
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/oracle.h"
#include "core/error.h"

namespace memra::chat {
namespace {

using nlohmann::ordered_json;
using testing::OracleResult;

constexpr std::int64_t kNow = 1722000000;  // 2024-07-26 13:20:00 UTC

std::string fixture(const std::string& name) {
  return testing::read_file(std::string(MEMRA_SOURCE_DIR) + "/tests/chat/templates/" + name + ".jinja");
}

// Renders with both implementations and compares; an oracle template error must be our error too.
void expect_same(const std::string& tmpl_name, const std::vector<ChatMessage>& msgs, const ChatOptions& opt) {
  const std::string tmpl = fixture(tmpl_name);
  ASSERT_FALSE(tmpl.empty()) << "missing fixture " << tmpl_name;
  const ordered_json ctx = chat_context(msgs, opt);
  const OracleResult ref = testing::run_oracle(tmpl, ctx, kNow);
  if (ref.status == OracleResult::Status::Unavailable) GTEST_SKIP() << "Jinja2 oracle unavailable: " << ref.text;
  if (ref.status == OracleResult::Status::TemplateError) {
    EXPECT_THROW(render_chat(tmpl, msgs, opt), memra::Error) << "Jinja2 failed with: " << ref.text;
    return;
  }
  std::string ours;
  ASSERT_NO_THROW(ours = render_chat(tmpl, msgs, opt)) << "Jinja2 rendered:\n" << ref.text;
  EXPECT_EQ(ours, ref.text) << "template " << tmpl_name;
  // The comparison must not pass vacuously: every plain user turn shows up in the prompt.
  for (const ChatMessage& m : msgs) {
    if (m.extra.empty() && m.role == "user") {
      EXPECT_NE(ours.find(m.content.substr(2, 8)), std::string::npos) << m.content;
    }
  }
}

std::vector<ChatMessage> three_turns(bool with_system) {
  std::vector<ChatMessage> m;
  if (with_system) m.push_back({"system", "You are terse.\nAnswer in one line. ", {}});
  m.push_back({"user", "  Hello there!\nHow are you? ", {}});
  m.push_back({"assistant", "I'm fine \xe2\x80\x94 thanks. \"Quotes\" & <tags> {{ not a tag }}", {}});
  m.push_back({"user", "Tell me about \xe6\x97\xa5\xe6\x9c\xac in one line.\t", {}});
  return m;
}

ChatOptions options(bool add_generation_prompt, const std::string& bos, const std::string& eos) {
  ChatOptions o;
  o.add_generation_prompt = add_generation_prompt;
  o.bos_token = bos;
  o.eos_token = eos;
  o.now_unix = kNow;
  return o;
}

struct Family {
  const char* name;
  const char* bos;
  const char* eos;
};

const Family kFamilies[] = {
    {"smollm2", "<|im_start|>", "<|im_end|>"},
    {"qwen2.5", "", "<|im_end|>"},
    {"qwen3", "", "<|im_end|>"},
    {"llama3.1", "<|begin_of_text|>", "<|eot_id|>"},
    {"llama3.2", "<|begin_of_text|>", "<|eot_id|>"},
    {"gemma2", "<bos>", "<eos>"},
    {"gemma3", "<bos>", "<eos>"},
    {"gpt-oss", "<|startoftext|>", "<|return|>"},
};

class ThreeTurn : public ::testing::TestWithParam<std::tuple<int, bool, bool>> {};

TEST_P(ThreeTurn, MatchesJinja2) {
  const auto [fam, sys, agp] = GetParam();
  const Family& f = kFamilies[fam];
  expect_same(f.name, three_turns(sys), options(agp, f.bos, f.eos));
}

INSTANTIATE_TEST_SUITE_P(Families, ThreeTurn,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(std::size(kFamilies))),
                                            ::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           std::string n = kFamilies[std::get<0>(info.param)].name;
                           for (char& c : n)
                             if (c == '.' || c == '-') c = '_';
                           return n + (std::get<1>(info.param) ? "_system" : "_nosystem") +
                                  (std::get<2>(info.param) ? "_genprompt" : "_nogenprompt");
                         });

const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city \u00e9t\u00e9",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
   "days": {"type": "integer", "default": 3}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "noop", "description": "Nothing", "parameters": {}}}
])";

std::vector<ChatMessage> tool_conversation(bool with_system) {
  std::vector<ChatMessage> m;
  if (with_system) m.push_back({"system", "You call tools.", {}});
  m.push_back({"user", "  What's the weather in Paris?", {}});
  ChatMessage call{"assistant", "", {}};
  call.extra["tool_calls"] = ordered_json::parse(
      R"([{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2.5}}}])");
  m.push_back(call);
  m.push_back({"tool", "{\"temp\": 21}", {}});
  m.push_back({"user", "  Thanks, and tomorrow?", {}});
  return m;
}

TEST(Tools, QwenAndLlamaMatchJinja2) {
  for (const char* name : {"qwen2.5", "qwen3", "llama3.1", "llama3.2"}) {
    for (bool sys : {false, true}) {
      SCOPED_TRACE(std::string(name) + (sys ? " with system" : " without system"));
      ChatOptions o = options(true, "<|begin_of_text|>", "<|eot_id|>");
      o.variables["tools"] = ordered_json::parse(kTools);
      expect_same(name, tool_conversation(sys), o);
      if (::testing::Test::IsSkipped()) return;
    }
  }
}

TEST(Tools, LlamaBuiltinToolsAndDateString) {
  ChatOptions o = options(true, "<|begin_of_text|>", "<|eot_id|>");
  o.variables["builtin_tools"] = ordered_json::parse(R"(["code_interpreter", "brave_search", "wolfram_alpha"])");
  o.variables["date_string"] = "01 Jan 2025";
  o.variables["tools_in_user_message"] = false;
  o.variables["tools"] = ordered_json::parse(kTools);
  std::vector<ChatMessage> m = {{"system", "sys", {}}, {"user", "  search it", {}}};
  ChatMessage call{"assistant", "", {}};
  call.extra["tool_calls"] = ordered_json::parse(
      R"([{"function": {"name": "brave_search", "arguments": {"query": "memra", "lang": "en"}}}])");
  m.push_back(call);
  m.push_back({"ipython", "result text", {}});
  expect_same("llama3.1", m, o);
}

TEST(Qwen3, ThinkingContentAndEnableThinking) {
  std::vector<ChatMessage> m = {
      {"user", "  Question one?", {}},
      {"assistant", "<think>\nreasoning A\n</think>\n\nAnswer A", {}},
      {"user", "  Question two?", {}},
  };
  ChatMessage last{"assistant", "Answer B", {}};
  last.extra["reasoning_content"] = "reasoning B";
  for (bool agp : {true, false}) {
    ChatOptions o = options(agp, "", "<|im_end|>");
    o.variables["enable_thinking"] = false;
    expect_same("qwen3", m, o);
    if (::testing::Test::IsSkipped()) return;
    auto m2 = m;
    m2.push_back(last);
    expect_same("qwen3", m2, o);
  }
}

TEST(Gemma3, MultimodalContentParts) {
  std::vector<ChatMessage> m = {{"system", "Be brief.", {}}};
  ChatMessage u{"user", "", {}};
  u.extra["content"] = ordered_json::parse(
      R"([{"type": "image"}, {"type": "text", "text": "  Describe this.  "}])");
  m.push_back(u);
  expect_same("gemma3", m, options(true, "<bos>", "<eos>"));
}

TEST(Gemma, RoleAlternationErrorMatchesJinja2) {
  // Both Jinja2 and memra must refuse: two user turns in a row.
  std::vector<ChatMessage> m = {{"user", "a", {}}, {"user", "b", {}}};
  expect_same("gemma2", m, options(true, "<bos>", "<eos>"));
  expect_same("gemma3", m, options(true, "<bos>", "<eos>"));
}

// GPT-OSS (harmony): macros rendering JSON-schema tools as TypeScript, builtin tools, developer
// message, analysis/final channels and tool-call round trips.
TEST(GptOss, ToolsBuiltinsAndChannels) {
  const char* tools = R"([
    {"type": "function", "function": {"name": "lookup", "description": "Find things",
     "parameters": {"type": "object", "properties": {
       "query": {"type": "string", "description": "What to find"},
       "mode": {"type": "string", "enum": ["fast", "deep"], "default": "fast"},
       "limit": {"type": "integer", "default": 5},
       "tags": {"type": "array", "items": {"type": "string"}, "nullable": true},
       "filters": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
       "either": {"oneOf": [{"type": "string", "description": "a name"}, {"type": "number", "default": 1}]},
       "multi": {"type": ["string", "null"]},
       "opts": {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "number"}}, "required": ["a"]},
       "free": {}
     }, "required": ["query"]}}},
    {"type": "function", "function": {"name": "ping", "description": "No arguments"}}
  ])";
  std::vector<ChatMessage> m = {{"developer", "Be precise.", {}}, {"user", "  Find cats.", {}}};
  ChatMessage call{"assistant", "", {}};
  call.extra = ordered_json::parse(
      R"({"thinking": "I should look it up.", "tool_calls": [{"function": {"name": "lookup", "arguments": {"query": "cats"}}}]})");
  m.push_back(call);
  m.push_back({"tool", "{\"found\": 3}", {}});
  ChatMessage final_answer{"assistant", "There are 3 cats.", {}};
  final_answer.extra["thinking"] = "Three results.";
  m.push_back(final_answer);
  m.push_back({"user", "  Thanks!", {}});
  for (bool agp : {true, false}) {
    ChatOptions o = options(agp, "<|startoftext|>", "<|return|>");
    o.variables["tools"] = ordered_json::parse(tools);
    o.variables["builtin_tools"] = ordered_json::parse(R"(["browser", "python"])");
    o.variables["reasoning_effort"] = "high";
    expect_same("gpt-oss", m, o);
    if (::testing::Test::IsSkipped()) return;
    auto trailing = m;
    trailing.push_back(final_answer);  // assistant last: final channel ends with <|return|> when no prompt
    expect_same("gpt-oss", trailing, o);
  }
}

TEST(GptOss, ToolMessageWithoutCallIsRefusedLikeJinja2) {
  std::vector<ChatMessage> m = {{"user", "hi", {}}, {"tool", "orphan", {}}};
  expect_same("gpt-oss", m, options(true, "", ""));
}

}  // namespace
}  // namespace memra::chat
