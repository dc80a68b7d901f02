// run-gen: inspect a GGUF (--info), tokenize/detokenize, generate text (plain or chat), dump
// logits of given ids. Exit codes and the receipt on every path come from apps/common.
#include <cstdio>
#include <memory>

#include "common/app.h"
#include "core/error.h"
#include "gguf/gguf.h"
#include "modes.h"
#include "options.h"

int main(int argc, char** argv) {
  memra::rungen::Options o;
  memra::app::Spec spec;
  spec.tool = "run-gen";
  spec.description =
      "memra run-gen: generate text from a GGUF model\n"
      "  run-gen MODEL.gguf -p TEXT [-n N] [--chat [--system TEXT]]   generate (streams to stdout)\n"
      "  run-gen MODEL.gguf --tokenize -p TEXT | --prompt-file FILE   ids as a JSON array\n"
      "  run-gen MODEL.gguf --detokenize 1,2,3                        text of ids\n"
      "  run-gen MODEL.gguf --ids 1,2,3 --logits-out FILE [-n N]      logits of every position\n"
      "  run-gen --info MODEL.gguf                                    metadata and tensor table\n"
      "  llama.cpp's spellings work too: -m MODEL.gguf, -c N, -f FILE, -s SEED";
  spec.add_options = [&](CLI::App& cli) { memra::rungen::add_options(cli, o); };
  spec.apply_cli = [&](memra::Config& c) { memra::rungen::apply_cli(o, c); };
  spec.run = [&](memra::app::Context& ctx) -> int {
    const auto& cfg = ctx.cfg;
    if (cfg.model.path.empty()) MEMRA_FAIL("no model given (positional argument, -m/--model or model.path)");
    const int n_modes = (int)o.info + (int)o.tokenize + (o.o_detokenize->count() > 0) + (o.o_ids->count() > 0);
    MEMRA_CHECK(n_modes <= 1, "--info, --tokenize, --detokenize and --ids are exclusive; got {} of them", n_modes);
    MEMRA_CHECK(o.logits_out.empty() || o.o_ids->count() > 0, "--logits-out needs --ids");
    auto file = std::make_shared<const memra::gguf::File>(memra::gguf::File::open(cfg.model.path));
    // The file's sha256 is read in the background while the weights load (load_session waits
    // for it before anything is timed).
    if (cfg.receipt.hash_model)
      ctx.receipt.set_model_hash_later(*file);
    else
      ctx.receipt.set_model(*file, false);
    if (o.info) {
      std::fputs(memra::gguf::describe(*file).c_str(), stdout);
      ctx.receipt.results()["mode"] = "info";
      return 0;
    }
    if (o.tokenize) return memra::rungen::run_tokenize(ctx, o, *file);
    if (o.o_detokenize->count() > 0) return memra::rungen::run_detokenize(ctx, o, *file);
    if (o.o_ids->count() > 0) return memra::rungen::run_ids(ctx, o, file);
    MEMRA_CHECK(o.has_prompt(), "no prompt given: use --prompt TEXT (-p), --prompt-file FILE, or --ids 1,2,3");
    return memra::rungen::run_generate(ctx, o, file);
  };
  return memra::app::main(argc, argv, spec);
}
