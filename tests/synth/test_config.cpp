// The [synth] config section and lib/synth agree: every mix the library knows is a value the
// config accepts (and nothing else), and the default preset exists.
#include <gtest/gtest.h>

#include "config/config.h"
#include "core/error.h"
#include "synth/plan.h"

using namespace memra;

TEST(SynthConfig, MixChoicesMatchLibrary) {
  for (synth::Mix m : synth::all_mixes()) {
    const std::string mix(synth::mix_name(m));
    const Config c = load_config({}, {"synth.mix=\"" + mix + "\""});
    EXPECT_EQ(c.synth.mix, mix);
  }
  EXPECT_THROW(load_config({}, {"synth.mix=\"q3_k_m\""}), Error);
  EXPECT_NE(defaults_toml().find("mix = 'q4_k_m'"), std::string::npos);
  // The config's list has exactly the library's mixes: count them in the documented choices.
  const std::string d = defaults_toml();
  const auto line = d.substr(d.find("tensor type mix"), d.find('\n', d.find("tensor type mix")) - d.find("tensor type mix"));
  size_t words = 0;
  for (size_t i = line.find("one of:") + 7; i < line.size(); ++i) words += line[i] == ' ' && i + 1 < line.size() && line[i + 1] != ' ';
  EXPECT_EQ(words, synth::all_mixes().size()) << line;
}

TEST(SynthConfig, DefaultsAndDims) {
  const Config c = load_config({}, {"synth.dims=[\"n_layer=2\", \"n_embd=512\"]", "synth.seed=7"});
  EXPECT_NO_THROW(synth::find_preset(Config{}.synth.preset));
  EXPECT_EQ(c.synth.dims.size(), 2u);
  EXPECT_EQ(c.synth.seed, 7);
  EXPECT_THROW(load_config({}, {"synth.seed=-1"}), Error);
}
