#include "tokenizer/tokenizer.h"

#include <algorithm>

namespace memra::tok {

namespace {

// Length of a trailing UTF-8 sequence that is still incomplete (0 if none): a lead byte near
// the end followed only by continuation bytes, fewer than it announces.
size_t incomplete_tail(std::string_view s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<uint8_t>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t need = 0;
    if ((c & 0xE0) == 0xC0) need = 2;
    else if ((c & 0xF0) == 0xE0) need = 3;
    else if ((c & 0xF8) == 0xF0) need = 4;
    return need > back ? back : 0;
  }
  return 0;
}

// True when nothing appended later can change how clean_spaces treats the text so far: the
// passes look at most three characters ahead and only around spaces and apostrophes.
bool settled(std::string_view raw) {
  if (raw.size() < 3) return false;
  for (size_t i = raw.size() - 3; i < raw.size(); ++i)
    if (raw[i] == ' ' || raw[i] == '\'') return false;
  return true;
}

}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool render_special, Mode mode)
    : tok_(&tok), render_special_(render_special), mode_(mode) {}

void StreamDecoder::reset() {
  first_ = true;
  raw_.clear();
  emitted_ = 0;
}

std::string StreamDecoder::push(int32_t id) {
  std::string piece = tok_->token_to_piece(id, render_special_);
  if (mode_ == Mode::Detokenize && first_ && tok_->info().add_space_prefix && !piece.empty() && piece[0] == ' ')
    piece.erase(0, 1);
  first_ = false;  // llama.cpp strips only the first token's space, even if it renders empty
  raw_ += piece;
  return take(false);
}

std::string StreamDecoder::flush() { return take(true); }

std::string StreamDecoder::take(bool final) {
  const bool clean = mode_ == Mode::Detokenize && tok_->info().clean_spaces;
  const std::string text = clean ? tok_->clean_spaces(raw_) : raw_;
  const bool done = final || !clean || settled(raw_);
  size_t stable = text.size();
  if (!done) stable = stable >= 3 ? stable - 3 : 0;
  if (!final) stable -= incomplete_tail(std::string_view(text).substr(0, stable));
  std::string out;
  if (stable > emitted_) out = text.substr(emitted_, stable - emitted_);
  emitted_ = std::max(emitted_, stable);
  // Once everything is out and settled, the raw text can be dropped: what follows is
  // cleaned independently of it.
  if (emitted_ == text.size() && (final || !clean || settled(raw_))) {
    raw_.clear();
    emitted_ = 0;
  }
  return out;
}

}  // namespace memra::tok
