#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "config/config.h"
#include "core/error.h"

namespace fs = std::filesystem;
using memra::Config;
using memra::load_config;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("memra-config-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path p = path / name;
    std::ofstream(p) << text;
    return p.string();
  }
};

// Runs load_config and returns the error message (fails the test when nothing is thrown).
std::string error_of(const std::vector<std::string>& files, const std::vector<std::string>& sets = {}) {
  try {
    load_config(files, sets);
  } catch (const memra::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a memra::Error";
  return "";
}

}  // namespace

TEST(Config, DefaultsMatchStructDefaults) {
  const Config c = load_config({}, {});
  EXPECT_EQ(c.run.n_predict, 128);
  EXPECT_EQ(c.kv.type_k, "auto");
  EXPECT_EQ(c.kv.type_v, "auto");
  EXPECT_TRUE(c.cpu.quantize_activations);
  EXPECT_EQ(c.run.backend, "auto");
}

TEST(Config, LaterFilesOverrideEarlierAndSetOverridesFiles) {
  TempDir d;
  const auto a = d.write("a.toml", "[run]\nn_predict = 7\nn_ctx = 100\n");
  const auto b = d.write("b.toml", "[run]\nn_predict = 9\n[sample]\ntemperature = 0.5\nstop = [\"x\", \"y\"]\n");
  const Config c = load_config({a, b}, {"run.n_ctx=300", "kv.type_k=f16", "bench.n_prompt=[512, 2048]"});
  EXPECT_EQ(c.run.n_predict, 9);
  EXPECT_EQ(c.run.n_ctx, 300);
  EXPECT_DOUBLE_EQ(c.sample.temperature, 0.5);
  EXPECT_EQ(c.sample.stop, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(c.kv.type_k, "f16");
  EXPECT_EQ(c.bench.n_prompt, (std::vector<int64_t>{512, 2048}));
}

TEST(Config, UnknownKeyNamesFileLineAndKey) {
  TempDir d;
  const auto f = d.write("u.toml", "[run]\nn_predict = 3\n\nn_predcit = 4\n");
  const std::string e = error_of({f});
  EXPECT_NE(e.find(f + ":4"), std::string::npos) << e;
  EXPECT_NE(e.find("'run.n_predcit'"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key"), std::string::npos) << e;
}

TEST(Config, UnknownSectionIsAnError) {
  TempDir d;
  const auto f = d.write("s.toml", "[runn]\nx = 1\n");
  const std::string e = error_of({f});
  EXPECT_NE(e.find(f + ":"), std::string::npos) << e;
  EXPECT_NE(e.find("'runn'"), std::string::npos) << e;
}

TEST(Config, WrongTypeNamesFileLineKeyAndTypes) {
  TempDir d;
  const auto f = d.write("t.toml", "[threads]\nn = \"four\"\n");
  const std::string e = error_of({f});
  EXPECT_NE(e.find(f + ":2"), std::string::npos) << e;
  EXPECT_NE(e.find("'threads.n'"), std::string::npos) << e;
  EXPECT_NE(e.find("expected integer"), std::string::npos) << e;
}

TEST(Config, OutOfRangeNamesFileLineKeyAndRange) {
  TempDir d;
  const auto f = d.write("r.toml", "[sample]\ntop_p = 1.5\n");
  const std::string e = error_of({f});
  EXPECT_NE(e.find(f + ":2"), std::string::npos) << e;
  EXPECT_NE(e.find("'sample.top_p'"), std::string::npos) << e;
  EXPECT_NE(e.find("out of range"), std::string::npos) << e;
}

TEST(Config, BadChoiceListsAllowedValues) {
  const std::string e = error_of({}, {"kv.type_v=q4_0"});
  EXPECT_NE(e.find("--set kv.type_v=q4_0"), std::string::npos) << e;
  EXPECT_NE(e.find("q5_1"), std::string::npos) << e;
}

TEST(Config, MissingFileIsAnErrorNamingIt) {
  const std::string e = error_of({"/nonexistent/memra.toml"});
  EXPECT_NE(e.find("/nonexistent/memra.toml"), std::string::npos) << e;
}

TEST(Config, SyntaxErrorNamesLine) {
  TempDir d;
  const auto f = d.write("x.toml", "[run]\nn_predict = = 3\n");
  const std::string e = error_of({f});
  EXPECT_NE(e.find(f + ":2"), std::string::npos) << e;
}

TEST(Config, SetRejectsUnknownKeyAndBadValue) {
  EXPECT_NE(error_of({}, {"run.nope=1"}).find("unknown key"), std::string::npos);
  EXPECT_NE(error_of({}, {"run.n_ctx=abc"}).find("cannot parse"), std::string::npos);
  EXPECT_NE(error_of({}, {"run.n_ctx"}).find("section.key=value"), std::string::npos);
  // A bare word is accepted for a string key.
  EXPECT_EQ(load_config({}, {"run.backend=cpu"}).run.backend, "cpu");
}

TEST(Config, PrintedConfigParsesBackToTheSameConfig) {
  TempDir d;
  const Config c = load_config({}, {"run.n_predict=11", "sample.stop=[\"</s>\"]", "sample.min_p=0.25"});
  const auto f = d.write("p.toml", memra::to_toml(c));
  const Config back = load_config({f}, {});
  EXPECT_EQ(memra::to_toml(back), memra::to_toml(c));
  EXPECT_EQ(memra::config_hash(back), memra::config_hash(c));
  EXPECT_NE(memra::config_hash(back), memra::config_hash(Config{}));
}

TEST(Config, DefaultsFileDocumentsEveryKeyAndIsUpToDate) {
  const fs::path p = fs::path(MEMRA_SOURCE_DIR) / "configs" / "defaults.toml";
  std::ifstream in(p);
  ASSERT_TRUE(in.good()) << p;
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, memra::defaults_toml()) << "configs/defaults.toml is stale: regenerate it with scripts/gen-defaults.sh";
  // And it loads to exactly the default config.
  EXPECT_EQ(memra::to_toml(load_config({p.string()}, {})), memra::to_toml(Config{}));
  for (const auto& k : memra::config_keys()) {
    const auto dot = k.find('.');
    EXPECT_NE(text.find("\n" + k.substr(dot + 1) + " = "), std::string::npos) << k;
  }
}

TEST(Config, EveryShippedConfigLoads) {
  const fs::path dir = fs::path(MEMRA_SOURCE_DIR) / "configs";
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".toml") continue;
    EXPECT_NO_THROW(load_config({e.path().string()}, {})) << e.path();
    ++n;
  }
  EXPECT_GE(n, 2u);
  const Config exact = load_config({(dir / "cpu-exact-f32.toml").string()}, {});
  EXPECT_FALSE(exact.cpu.quantize_activations);
  EXPECT_EQ(exact.kv.type_k, "f32");
}

TEST(Config, CpuAttentionKey) {
  EXPECT_EQ(load_config({}, {}).cpu.attention, "llamacpp");
  EXPECT_EQ(load_config({}, {"cpu.attention=exact"}).cpu.attention, "exact");
  EXPECT_THROW(load_config({}, {"cpu.attention=flash"}), memra::Error);
}

// Every committed config file (the arms the device phases pass to pp-bench and the test suite,
// the presets) loads with today's keys: a key renamed or removed since would otherwise surface only
// on the H200, as an error in a device call. And every configs/ file scripts/device-run.sh names
// exists.
TEST(ConfigFiles, EveryCommittedConfigLoads) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(MEMRA_SOURCE_DIR) / "configs";
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".toml") continue;
    ++n;
    EXPECT_NO_THROW(memra::load_config({e.path().string()}, {})) << e.path();
  }
  EXPECT_GT(n, 3);
  std::ifstream in(fs::path(MEMRA_SOURCE_DIR) / "scripts" / "device-run.sh");
  ASSERT_TRUE(in);
  const std::string script((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::regex ref(R"(configs/[A-Za-z0-9._-]+\.toml)");
  int refs = 0;
  for (auto it = std::sregex_iterator(script.begin(), script.end(), ref); it != std::sregex_iterator(); ++it, ++refs)
    EXPECT_TRUE(fs::exists(fs::path(MEMRA_SOURCE_DIR) / it->str())) << "scripts/device-run.sh names " << it->str();
  EXPECT_GT(refs, 0);
}
