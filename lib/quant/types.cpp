#include "quant/types.h"

#include <cctype>

namespace memra {

std::optional<QType> qtype_from_name(std::string_view name) {
  for (const auto& t : kQTypeTable) {
    if (t.name.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < name.size() && eq; ++i)
      eq = std::toupper((unsigned char)name[i]) == (unsigned char)t.name[i];
    if (eq) return t.type;
  }
  return std::nullopt;
}

}  // namespace memra
