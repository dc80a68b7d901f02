#pragma once
// Loader for ../shared/reference/quant/<TYPE>.jsonl (ggml reference rows; README there).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace memra::test {

inline std::vector<uint8_t> base64_decode(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<uint8_t> out;
  out.reserve(s.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const int v = val(c);
    if (v < 0) throw std::runtime_error(std::string("base64: bad character '") + c + "'");
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back((uint8_t)(acc >> bits));
    }
  }
  return out;
}

inline std::vector<float> as_floats(const std::vector<uint8_t>& b) {
  std::vector<float> f(b.size() / 4);
  std::memcpy(f.data(), b.data(), f.size() * 4);
  return f;
}

struct RefRow {
  std::string type, row_kind, quantizer, imatrix;
  int row_index = 0;
  int64_t n = 0;
  std::vector<float> input, dequant;
  std::vector<uint8_t> quant;
  std::optional<std::string> vec_dot_type;
  std::vector<float> act;
  std::vector<uint8_t> act_quant;
  double vec_dot = 0;
  std::vector<uint8_t> cpu_from_float;  // Q8_0 / Q8_1 / Q8_K only
};

inline std::filesystem::path ref_quant_dir() {
  return std::filesystem::path(MEMRA_SHARED_DIR) / "reference" / "quant";
}

inline std::vector<RefRow> load_ref_rows(const std::string& type) {
  std::ifstream in(ref_quant_dir() / (type + ".jsonl"));
  if (!in) throw std::runtime_error("cannot open reference file for " + type);
  std::vector<RefRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    RefRow r;
    r.type = j.at("type");
    r.row_kind = j.at("row_kind");
    r.row_index = j.at("row_index");
    r.n = j.at("n");
    r.quantizer = j.at("quantizer");
    r.imatrix = j.at("imatrix");
    r.input = as_floats(base64_decode(j.at("input_f32")));
    r.dequant = as_floats(base64_decode(j.at("dequant_f32")));
    r.quant = base64_decode(j.at("quant_bytes"));
    if (j.contains("vec_dot_type")) {
      r.vec_dot_type = j.at("vec_dot_type").get<std::string>();
      r.act = as_floats(base64_decode(j.at("act_f32")));
      r.act_quant = base64_decode(j.at("act_quant_bytes"));
      r.vec_dot = j.at("vec_dot_f32");
    }
    if (j.contains("cpu_from_float_bytes")) r.cpu_from_float = base64_decode(j.at("cpu_from_float_bytes"));
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace memra::test
