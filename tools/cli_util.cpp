// Option parsing conventions shared by the CLI subcommands.
#include "tools/cli_util.h"

#include <charconv>
#include <cstdio>

#include "engine/error.h"
#include "server/server_options.h"

namespace anelm::tools {

using namespace engine;

std::optional<cxxopts::ParseResult> parse_cli(cxxopts::Options& options, int argc, char** argv) {
  options.add_options()("h,help", "print this help");
  try {
    auto result = options.parse(argc, argv);
    if (result.count("help")) {
      std::fputs(options.help().c_str(), stdout);
      return std::nullopt;
    }
    if (!result.unmatched().empty())
      throw Error(ErrorKind::kInvalidArgument, "unexpected argument '" + result.unmatched()[0] + "'");
    return result;
  } catch (const cxxopts::exceptions::exception& e) {
    throw Error(ErrorKind::kInvalidArgument, server::name_the_flag(argc, argv, e.what()) + " (see --help)");
  }
}

void add_engine_flags(cxxopts::Options& options) {
  options.add_options("model")
      ("m,model", "GGUF file or HuggingFace model directory", cxxopts::value<std::string>())
      ("backend", "cpu or ane", cxxopts::value<std::string>()->default_value("cpu"))
      ("threads", "compute threads (0: all cores)", cxxopts::value<int>()->default_value("0"))
      ("ctx", "context length in tokens (0: min(model, 4096))", cxxopts::value<int>()->default_value("0"))
      ("weights", std::string("re-quantize weights at load: ") + engine::kWeightsTypeNames,
       cxxopts::value<std::string>());
}

engine::Backend parse_backend(const std::string& name) {
  if (name == "cpu") return engine::Backend::kCpu;
  if (name == "ane") return engine::Backend::kAne;
  throw Error(ErrorKind::kInvalidArgument, "--backend: expected cpu or ane, got '" + name + "'");
}

engine::DType parse_weight_type(const std::string& name) {
  if (const auto t = engine::weights_type_from_name(name)) return *t;
  throw Error(ErrorKind::kInvalidArgument,
              std::string("--weights: expected ") + engine::kWeightsTypeNames + ", got '" + name + "'");
}

engine::EngineOptions engine_options_from(const cxxopts::ParseResult& r) {
  if (!r.count("model")) throw Error(ErrorKind::kInvalidArgument, "--model is required");
  engine::EngineOptions o;
  o.model_path = r["model"].as<std::string>();
  o.backend = parse_backend(r["backend"].as<std::string>());
  o.threads = r["threads"].as<int>();
  o.ctx = r["ctx"].as<int>();
  if (o.threads < 0 || o.threads > 1024)
    throw Error(ErrorKind::kInvalidArgument, "--threads must be in [0, 1024], got " + std::to_string(o.threads));
  if (o.ctx < 0)
    throw Error(ErrorKind::kInvalidArgument, "--ctx must be >= 0, got " + std::to_string(o.ctx));
  if (r.count("weights")) o.weights = parse_weight_type(r["weights"].as<std::string>());
  return o;
}

std::vector<int> parse_id_list(const std::string& text) {
  std::vector<int> ids;
  size_t i = 0;
  auto is_sep = [](char c) { return c == ' ' || c == ',' || c == '[' || c == ']' || c == '\n' || c == '\t'; };
  while (i < text.size()) {
    if (is_sep(text[i])) { ++i; continue; }
    size_t j = i;
    while (j < text.size() && !is_sep(text[j])) ++j;
    int v = 0;
    auto [p, ec] = std::from_chars(text.data() + i, text.data() + j, v);
    if (ec != std::errc() || p != text.data() + j || v < 0)
      throw Error(ErrorKind::kInvalidArgument, "--prompt-ids: '" + text.substr(i, j - i) + "' is not a token id");
    ids.push_back(v);
    i = j;
  }
  return ids;
}

}  // namespace anelm::tools
