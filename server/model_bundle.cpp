// Loads the engine and the tokenizer for one model path: the only place engine and tokenizer meet.
#include "server/model_bundle.h"

#include <algorithm>
#include <filesystem>

#include "engine/error.h"
#include "engine/gguf.h"
#include "server/gguf_vocab.h"

namespace anelm::server {

namespace fs = std::filesystem;

std::unique_ptr<tok::Tokenizer> load_tokenizer(const std::string& model_path) {
  std::error_code ec;
  if (fs::is_directory(model_path, ec)) return tok::Tokenizer::from_hf_dir(model_path);
  if (!fs::exists(model_path, ec))
    throw Error(ErrorKind::kNotFound, "model not found: " + model_path);
  auto gguf = engine::GgufFile::open(model_path);
  if (!gguf->has("tokenizer.ggml.tokens"))
    throw Error(ErrorKind::kFormat, model_path + ": no tokenizer in this GGUF (tokenizer.ggml.tokens missing)");
  return tok::Tokenizer::create(vocab_from_gguf(*gguf));
}

ModelBundle load_model_bundle(engine::EngineOptions opts, const engine::LoadProgress& progress, bool reranking) {
  ModelBundle b;
  if (progress) progress("tokenizer", 0, 1);
  b.tokenizer = load_tokenizer(opts.model_path);
  if (reranking) {  // Qwen3-Reranker's labels, as its model card and llama.cpp's converter name them
    const std::vector<std::string>& tokens = b.tokenizer->vocab().tokens;
    for (const char* label : {"yes", "no"}) {
      const auto it = std::find(tokens.begin(), tokens.end(), label);
      if (it == tokens.end()) {
        throw Error(ErrorKind::kUnsupported, "--reranking: " + opts.model_path + " has no token \"" + label +
                                                 "\" (a Qwen3-Reranker's vocabulary has \"yes\" and \"no\")");
      }
      opts.rerank_labels.push_back(static_cast<int>(it - tokens.begin()));
    }
  }
  b.engine = engine::Engine::load(opts, progress);
  if (b.tokenizer->vocab_size() > b.engine->config().vocab_size)
    throw Error(ErrorKind::kFormat, opts.model_path + ": tokenizer has " +
                                        std::to_string(b.tokenizer->vocab_size()) +
                                        " tokens but the model's vocab_size is " +
                                        std::to_string(b.engine->config().vocab_size));
  b.model_id = default_model_id(opts.model_path);
  return b;
}

std::string default_model_id(const std::string& model_path) {
  const fs::path p = fs::path(model_path).lexically_normal();
  const fs::path leaf = p.has_filename() ? p : p.parent_path();
  // A directory inside a HuggingFace cache snapshot (models--ORG--NAME/snapshots/<commit>): the
  // repository name, not the commit hash that Open WebUI would otherwise show.
  if (leaf.parent_path().filename() == "snapshots") {
    const std::string repo = leaf.parent_path().parent_path().filename().string();
    const size_t sep = repo.find("--", 8);
    if (repo.rfind("models--", 0) == 0 && sep != std::string::npos)
      return repo.substr(8, sep - 8) + "/" + repo.substr(sep + 2);
  }
  // Otherwise the file or directory name: predictable for clients, unlike general.name.
  return leaf.filename().string();
}

}  // namespace anelm::server
