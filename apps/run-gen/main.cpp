// run-gen: inspect a GGUF (--info), tokenize/detokenize, generate text, dump logits.
#include <cstdio>

#include "common/app.h"
#include "core/error.h"
#include "gguf/gguf.h"

namespace {

struct Options {
  std::string model;
  bool info = false;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  memra::app::Spec spec;
  spec.tool = "run-gen";
  spec.description = "memra run-gen: generate text from a GGUF model";
  spec.add_options = [&](CLI::App& cli) {
    cli.add_option("model", o.model, "GGUF model file (or model.path in the config)");
    cli.add_flag("--info", o.info, "print the file's metadata and tensor table and exit");
  };
  spec.apply_cli = [&](memra::Config& c) {
    if (!o.model.empty()) c.model.path = o.model;
  };
  spec.run = [&](memra::app::Context& ctx) -> int {
    const auto& cfg = ctx.cfg;
    if (cfg.model.path.empty()) MEMRA_FAIL("no model given (positional argument or model.path)");
    auto file = memra::gguf::File::open(cfg.model.path);
    ctx.receipt.set_model(file, cfg.receipt.hash_model);
    if (o.info) {
      std::fputs(memra::gguf::describe(file).c_str(), stdout);
      ctx.receipt.results()["mode"] = "info";
      return 0;
    }
    MEMRA_FAIL("text generation is not wired yet: use --info");
  };
  return memra::app::main(argc, argv, spec);
}
