// `anelm tokenize`: prints the ids of a text as one JSON array (no BOS; special tokens only with --special).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "tools/cli_commands.h"
#include "tools/cli_util.h"
#include "server/model_bundle.h"

namespace anelm::tools {

using namespace engine;
using namespace server;

int run_tokenize(int argc, char** argv) {
  cxxopts::Options options("anelm tokenize", "Print the token ids of a text as a JSON array");
  options.add_options()
      ("m,model", "GGUF file or HuggingFace model directory", cxxopts::value<std::string>())
      ("text", "text to tokenize", cxxopts::value<std::string>())
      ("special", "parse special-token text such as <|im_start|>");
  auto r = parse_cli(options, argc, argv);
  if (!r) return 0;
  if (!r->count("model") || !r->count("text"))
    throw Error(ErrorKind::kInvalidArgument, "--model and --text are required");
  auto tokenizer = load_tokenizer((*r)["model"].as<std::string>());
  auto ids = tokenizer->encode((*r)["text"].as<std::string>(), r->count("special") > 0);
  std::puts(nlohmann::json(ids).dump().c_str());
  return 0;
}

}  // namespace anelm::tools
