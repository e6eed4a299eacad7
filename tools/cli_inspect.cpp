// `anelm inspect`: prints a model's parsed config, tensor count, dtypes and bytes as JSON.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "tools/model_info.h"
#include "tools/cli_commands.h"
#include "tools/cli_util.h"

namespace anelm::tools {

using namespace engine;

namespace {

nlohmann::json config_json(const engine::ModelConfig& c) {
  return {{"arch", engine::arch_name(c.arch)}, {"name", c.name},
          {"n_layers", c.n_layers},            {"d_model", c.d_model},
          {"n_heads", c.n_heads},              {"n_kv_heads", c.n_kv_heads},
          {"head_dim", c.head_dim},            {"d_ff", c.d_ff},
          {"vocab_size", c.vocab_size},        {"max_ctx", c.max_ctx},
          {"rms_eps", c.rms_eps},              {"rope_theta", c.rope_theta},
          {"rope_dim", c.rope_dim},
          {"rope_layout", c.rope_layout == engine::RopeLayout::kHalf ? "half" : "interleaved"},
          {"qkv_bias", c.qkv_bias},            {"tie_embeddings", c.tie_embeddings},
          {"bos_id", c.bos_id},                {"eos_ids", c.eos_ids}};
}

}  // namespace

int run_inspect(int argc, char** argv) {
  cxxopts::Options options("anelm inspect", "Print a model's config, tensors and bytes as JSON");
  options.add_options()("m,model", "GGUF file or HuggingFace model directory", cxxopts::value<std::string>());
  auto r = parse_cli(options, argc, argv);
  if (!r) return 0;
  if (!r->count("model")) throw Error(ErrorKind::kInvalidArgument, "--model is required");
  ModelInfo info = model_info((*r)["model"].as<std::string>());
  nlohmann::json dtypes = nlohmann::json::array();
  for (const auto& d : info.by_dtype) dtypes.push_back({{"dtype", d.dtype}, {"tensors", d.count}, {"bytes", d.bytes}});
  nlohmann::json out = {
      {"path", info.path},
      {"format", info.format == engine::ModelFormat::kGguf ? "gguf" : "hf"},
      {"config", config_json(info.config)},
      {"n_tensors", info.n_tensors},
      {"n_params", info.n_params},
      {"dtypes", dtypes},
      {"tensor_bytes", info.total_bytes},
      {"file_bytes", info.file_bytes},
  };
  if (info.format == engine::ModelFormat::kGguf) out["gguf_version"] = info.gguf_version;
  std::puts(out.dump(2).c_str());
  return 0;
}

}  // namespace anelm::tools
