// Loads the engine and the tokenizer for one model path: the only place engine and tokenizer meet.
#include "server/model_bundle.h"

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

ModelBundle load_model_bundle(const engine::EngineOptions& opts, const engine::LoadProgress& progress) {
  ModelBundle b;
  if (progress) progress("tokenizer", 0, 1);
  b.tokenizer = load_tokenizer(opts.model_path);
  b.engine = engine::Engine::load(opts, progress);
  if (b.tokenizer->vocab_size() > b.engine->config().vocab_size)
    throw Error(ErrorKind::kFormat, opts.model_path + ": tokenizer has " +
                                        std::to_string(b.tokenizer->vocab_size()) +
                                        " tokens but the model's vocab_size is " +
                                        std::to_string(b.engine->config().vocab_size));
  // The file or directory name: predictable for clients, unlike general.name.
  fs::path p(opts.model_path);
  b.model_id = p.has_filename() ? p.filename().string() : p.parent_path().filename().string();
  return b;
}

}  // namespace anelm::server
