// `anelm make-model`: writes a randomly initialised but valid model for tests and full-size benchmarks.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "tools/model_maker.h"
#include "tools/cli_commands.h"
#include "tools/cli_util.h"

namespace anelm::tools {

using namespace engine;

namespace {

engine::Arch parse_arch(const std::string& s) {
  if (s == "qwen2") return engine::Arch::kQwen2;
  if (s == "qwen3") return engine::Arch::kQwen3;
  if (s == "llama") return engine::Arch::kLlama;
  if (s == "qwen35") return engine::Arch::kQwen35;
  if (s == "granite") return engine::Arch::kGranite;
  if (s == "smollm3") return engine::Arch::kSmolLM3;
  if (s == "phi3") return engine::Arch::kPhi3;
  if (s == "gemma3") return engine::Arch::kGemma3;
  if (s == "gpt2") return engine::Arch::kGpt2;
  if (s == "bert") return engine::Arch::kBert;
  if (s == "nomic-bert") return engine::Arch::kNomicBert;
  throw Error(ErrorKind::kInvalidArgument, "--arch: expected qwen2, qwen3, qwen35, llama, granite, smollm3, phi3, gemma3, gpt2, bert or nomic-bert, got '" + s + "'");
}

engine::DType parse_dtype(const std::string& s) {
  if (s == "f32") return engine::DType::kF32;
  if (s == "bf16") return engine::DType::kBF16;
  if (const auto t = engine::weights_type_from_name(s)) return *t;
  throw Error(ErrorKind::kInvalidArgument,
              "--dtype: expected f32, bf16, " + std::string(engine::kWeightsTypeNames) + ", got '" + s + "'");
}

engine::ModelFormat parse_format(const std::string& s) {
  if (s == "gguf") return engine::ModelFormat::kGguf;
  if (s == "hf") return engine::ModelFormat::kHf;
  throw Error(ErrorKind::kInvalidArgument, "--format: expected gguf or hf, got '" + s + "'");
}

engine::Pooling parse_pooling(const std::string& s) {
  for (auto p : {engine::Pooling::kNone, engine::Pooling::kMean, engine::Pooling::kCls, engine::Pooling::kLast,
                 engine::Pooling::kRank}) {
    if (s == engine::pooling_name(p)) return p;
  }
  throw Error(ErrorKind::kInvalidArgument, "--pooling: expected none, mean, cls, last or rank, got '" + s + "'");
}

}  // namespace

int run_make_model(int argc, char** argv) {
  cxxopts::Options options("anelm make-model", "Write a randomly initialised but valid model");
  options.add_options()
      ("arch", "qwen2, qwen3, qwen35, llama, granite, smollm3, phi3, gemma3, gpt2, bert or nomic-bert", cxxopts::value<std::string>()->default_value("qwen2"))
      ("shape", "tiny, tiny256, qwen2.5-0.5b, qwen3-0.6b, llama-3.2-1b or llama-3.2-tiny; qwen35: tiny, "
       "qwen3.5-0.8b or qwen3.5-2b; granite: tiny or granite-3.3-2b; smollm3: tiny or smollm3-3b; gemma3: tiny or "
       "gemma-3-1b; gpt2: tiny or gpt2-124m (granite, smollm3: GGUF only); phi3: tiny, phi-4-mini or phi-3.5-mini; bert "
       "(GGUF only, an embedding model: --pooling mean by default): tiny, bge-small or bge-base; nomic-bert (the same): "
       "tiny or nomic-embed-text-v1.5",
       cxxopts::value<std::string>()->default_value("tiny"))
      ("dtype", std::string("f32, bf16, ") + engine::kWeightsTypeNames + " (block types: gguf only)",
       cxxopts::value<std::string>()->default_value("f16"))
      ("format", "gguf (a file) or hf (a directory)", cxxopts::value<std::string>()->default_value("gguf"))
      ("out", "output path", cxxopts::value<std::string>())
      ("seed", "weight seed (same seed: same weights in both formats)", cxxopts::value<uint64_t>()->default_value("42"))
      ("layers", "override the shape's layer count", cxxopts::value<int>()->default_value("0"))
      ("tokenizer-from", "copy the tokenizer from a GGUF file or HF directory (default: synthetic)",
       cxxopts::value<std::string>()->default_value(""))
      ("pooling", "an embedding model (gguf): none, mean, cls or last (last: inputs end with <|endoftext|>, "
       "as Qwen3-Embedding); rank: a reranker as llama.cpp converts Qwen3-Reranker (qwen3 only)", cxxopts::value<std::string>()->default_value("none"));
  auto r = parse_cli(options, argc, argv);
  if (!r) return 0;
  if (!r->count("out")) throw Error(ErrorKind::kInvalidArgument, "--out is required");

  MakeModelOptions o;
  o.arch = parse_arch((*r)["arch"].as<std::string>());
  o.shape = (*r)["shape"].as<std::string>();
  o.dtype = parse_dtype((*r)["dtype"].as<std::string>());
  o.format = parse_format((*r)["format"].as<std::string>());
  o.seed = (*r)["seed"].as<uint64_t>();
  o.layers = (*r)["layers"].as<int>();
  o.tokenizer = (*r)["tokenizer-from"].as<std::string>();
  o.pooling = parse_pooling((*r)["pooling"].as<std::string>());
  auto made = make_model(o, (*r)["out"].as<std::string>());
  nlohmann::json out = {{"out", made.path},          {"arch", engine::arch_name(made.config.arch)},
                        {"shape", o.shape},          {"dtype", engine::dtype_name(o.dtype)},
                        {"layers", made.config.n_layers}, {"vocab", made.config.vocab_size},
                        {"params", made.n_params},   {"tensor_bytes", made.data_bytes}};
  std::puts(out.dump().c_str());
  return 0;
}

}  // namespace anelm::tools
