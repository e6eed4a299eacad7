// `anelm compile`: writes the model's ANE programs (MIL text, weight blobs, manifest) to a directory.
#include "engine/error.h"
#include "server/cli_commands.h"
#include "server/cli_util.h"

namespace anelm::server {

int run_compile(int argc, char** argv) {
  cxxopts::Options options("anelm compile", "Write the ANE programs of a model to a directory");
  options.add_options()("m,model", "GGUF file or HuggingFace model directory", cxxopts::value<std::string>())
      ("out", "output directory", cxxopts::value<std::string>())("json", "print totals as JSON");
  auto r = parse_cli(options, argc, argv);
  if (!r) return 0;
  throw Error(ErrorKind::kUnsupported, "anelm compile: the ANE executor is not wired yet");
}

}  // namespace anelm::server
