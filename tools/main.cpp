// anelm entry point: dispatches to the subcommands (serve, generate, tokenize, inspect, bench, make-model,
// compile, render-template).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#ifdef ANELM_MIMALLOC
#include <mimalloc.h>
#endif

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "engine/error.h"
#include "tools/cli_commands.h"
#include "server/serve_command.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

constexpr Command kCommands[] = {
    {"serve", anelm::server::run_serve, "start the OpenAI-compatible HTTP server"},
    {"generate", anelm::tools::run_generate, "generate tokens from a prompt"},
    {"tokenize", anelm::tools::run_tokenize, "print the token ids of a text as JSON"},
    {"inspect", anelm::tools::run_inspect, "print a model's config, tensors and bytes as JSON"},
    {"bench", anelm::tools::run_bench, "measure prefill and decode tokens/s"},
    {"make-model", anelm::tools::run_make_model, "write a randomly initialised model"},
    {"compile", anelm::tools::run_compile, "write, plan or verify (--verify) the ANE programs of a model"},
    {"render-template", anelm::tools::run_render_template, "render a conversation with a chat template, exactly"},
};

void print_usage(std::FILE* out) {
  std::fprintf(out, "usage: anelm COMMAND [options]   (anelm COMMAND --help for its options)\n\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-11s %s\n", c.name, c.help);
}

}  // namespace

int main(int argc, char** argv) {
#ifdef ANELM_MIMALLOC
  // A reference to the library keeps it linked even under --as-needed: its malloc then replaces
  // glibc's for the whole process (see CMakeLists.txt).
  (void)mi_version();
#endif
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string_view name = argv[1];
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      // The other commands print their result on stdout (JSON for scripts: generate --json,
      // inspect, tokenize): their log lines (model load, ANE start-up) go to stderr.
      if (name != "serve") spdlog::set_default_logger(spdlog::stderr_color_mt("anelm"));
      return c.run(argc - 1, argv + 1);
    } catch (const anelm::Error& e) {
      std::fprintf(stderr, "anelm %s: error (%s): %s\n", c.name, anelm::error_kind_name(e.kind()),
                   e.what());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "anelm %s: error: %s\n", c.name, e.what());
    }
    return 1;
  }
  std::fprintf(stderr, "anelm: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}
