#pragma once
#include <cstdint>
#include <string>

#include "chat/ast.h"

namespace memra::chat {

// Renders a parsed template. `context` holds the template's variables; globals (range, namespace,
// raise_exception, strftime_now, ...) are added underneath it. Throws memra::Error with position.
std::string render_program(const Node& root, const std::string& src, const Dict& context, std::int64_t now_unix);

}  // namespace memra::chat
