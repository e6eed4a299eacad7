// GGUF tokenizer metadata -> tok::VocabData, mirroring llama.cpp's llama_vocab::load defaults.
#include "server/gguf_vocab.h"

#include <stdexcept>

namespace anelm::server {
namespace {

[[noreturn]] void fail(const engine::GgufFile& g, const std::string& key, const std::string& what) {
  throw std::invalid_argument(g.path() + ": " + key + " " + what);
}

// An id key; absent keys and the "none" value (-1 or 0xFFFFFFFF, which some converters write)
// keep `fallback`.
int read_id(const engine::GgufFile& g, const std::string& key, int fallback) {
  const auto v = g.find_int(key);
  if (!v) return fallback;
  if (*v < 0 || *v >= 0xFFFFFFFFll) return -1;
  return static_cast<int>(*v);
}

tok::PreTokenizer pre_from_name(const std::string& pre) {
  if (pre == "qwen2" || pre == "deepseek-r1-qwen") return tok::PreTokenizer::kQwen2;
  if (pre == "qwen35") return tok::PreTokenizer::kQwen35;
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3") {
    return tok::PreTokenizer::kLlama3;
  }
  return tok::PreTokenizer::kGpt2;  // "default", "gpt-2" and unknown names: llama.cpp's default regex
}

}  // namespace

tok::VocabData vocab_from_gguf(const engine::GgufFile& g) {
  tok::VocabData d;
  d.source = g.path();
  const std::string model = g.find_string("tokenizer.ggml.model").value_or("");
  if (model.empty()) fail(g, "tokenizer.ggml.model", "is missing");
  if (!g.has("tokenizer.ggml.tokens")) fail(g, "tokenizer.ggml.tokens", "is missing");
  d.tokens = g.get_string_array("tokenizer.ggml.tokens");
  const size_t n = d.tokens.size();

  if (g.has("tokenizer.ggml.token_type")) {
    const auto types = g.get_int_array("tokenizer.ggml.token_type");
    if (types.size() != n) {
      fail(g, "tokenizer.ggml.token_type", "has " + std::to_string(types.size()) + " entries for " +
                                               std::to_string(n) + " tokens");
    }
    d.types.reserve(n);
    for (int64_t t : types) {
      // Unknown values (0 = undefined) are treated as normal tokens.
      d.types.push_back((t >= 1 && t <= 6) ? static_cast<tok::TokenType>(t) : tok::TokenType::kNormal);
    }
  }

  if (model == "llama") {
    d.kind = tok::VocabKind::kSentencePiece;
    d.pre = tok::PreTokenizer::kNone;
    if (!g.has("tokenizer.ggml.scores")) fail(g, "tokenizer.ggml.scores", "is missing (required for model \"llama\")");
    const auto scores = g.get_float_array("tokenizer.ggml.scores");
    if (scores.size() != n) {
      fail(g, "tokenizer.ggml.scores", "has " + std::to_string(scores.size()) + " entries for " +
                                           std::to_string(n) + " tokens");
    }
    d.scores.assign(scores.begin(), scores.end());
    d.bos_id = 1, d.eos_id = 2, d.unk_id = 0;
    d.add_bos = true;
    d.add_space_prefix = true;
  } else if (model == "gpt2") {
    d.kind = tok::VocabKind::kByteLevelBpe;
    const std::string pre = g.find_string("tokenizer.ggml.pre").value_or("default");
    d.pre = pre_from_name(pre);
    // Qwen2's HF normalizer is NFC (llama.cpp skips it; identical for NFC input, which is the norm).
    d.normalize_nfc = d.pre == tok::PreTokenizer::kQwen2;
    d.ignore_merges = d.pre == tok::PreTokenizer::kLlama3;
    d.add_bos = d.pre == tok::PreTokenizer::kLlama3;
    d.add_space_prefix = false;
    d.bos_id = 11, d.eos_id = 11;  // llama.cpp's gpt2 defaults when the keys are absent
    if (!g.has("tokenizer.ggml.merges")) fail(g, "tokenizer.ggml.merges", "is missing (required for model \"gpt2\")");
    d.merges = g.get_string_array("tokenizer.ggml.merges");
  } else if (model == "bert") {
    // BERT WordPiece (bge, all-MiniLM, mxbai, snowflake-arctic-embed): llama.cpp's "bert" defaults,
    // [CLS] 101 as BOS, [UNK] 100, [SEP] 102, [PAD] 0; tokenizer.ggml.pre is not read (llama.cpp).
    d.kind = tok::VocabKind::kWordPiece;
    d.pre = tok::PreTokenizer::kNone;
    d.bos_id = 101, d.unk_id = 100, d.sep_id = 102, d.pad_id = 0;
    d.add_bos = true;
    d.add_sep = true;
    d.add_space_prefix = false;
    d.clean_spaces = true;
    d.normalize_lowercase = true;  // llama.cpp's BertNormalizer defaults when the keys are absent
  } else {
    fail(g, "tokenizer.ggml.model",
         "= \"" + model + "\" is not supported (expected \"gpt2\", \"llama\" or \"bert\")");
  }

  d.bos_id = read_id(g, "tokenizer.ggml.bos_token_id", d.bos_id);
  d.eos_id = read_id(g, "tokenizer.ggml.eos_token_id", d.eos_id);
  d.eot_id = read_id(g, "tokenizer.ggml.eot_token_id", d.eot_id);
  d.unk_id = read_id(g, "tokenizer.ggml.unknown_token_id", d.unk_id);
  d.pad_id = read_id(g, "tokenizer.ggml.padding_token_id", d.pad_id);
  d.sep_id = read_id(g, "tokenizer.ggml.seperator_token_id", d.sep_id);  // sic: llama.cpp's key
  // Fill-in-the-middle markers: the current keys, else the older prefix/suffix/middle ones.
  d.fim_pre_id = read_id(g, "tokenizer.ggml.fim_pre_token_id", read_id(g, "tokenizer.ggml.prefix_token_id", -1));
  d.fim_suf_id = read_id(g, "tokenizer.ggml.fim_suf_token_id", read_id(g, "tokenizer.ggml.suffix_token_id", -1));
  d.fim_mid_id = read_id(g, "tokenizer.ggml.fim_mid_token_id", read_id(g, "tokenizer.ggml.middle_token_id", -1));
  d.fim_rep_id = read_id(g, "tokenizer.ggml.fim_rep_token_id", -1);
  d.fim_sep_id = read_id(g, "tokenizer.ggml.fim_sep_token_id", -1);
  if (const auto v = g.find_bool("tokenizer.ggml.add_bos_token")) d.add_bos = *v;
  if (const auto v = g.find_bool("tokenizer.ggml.add_eos_token")) d.add_eos = *v;
  if (const auto v = g.find_bool("tokenizer.ggml.add_sep_token")) d.add_sep = *v;
  if (const auto v = g.find_bool("tokenizer.ggml.add_space_prefix")) d.add_space_prefix = *v;
  // BertNormalizer: strip_accents follows lowercase unless it has its own key (llama.cpp).
  if (const auto v = g.find_bool("tokenizer.ggml.normalizer.lowercase")) d.normalize_lowercase = *v;
  d.normalize_strip_accents = d.normalize_lowercase;
  if (const auto v = g.find_bool("tokenizer.ggml.normalizer.strip_accents")) {
    d.normalize_strip_accents = *v;
  }
  if (const auto v = g.find_string("tokenizer.chat_template")) d.chat_template = *v;
  if (const auto v = g.find_string("tokenizer.chat_template.rerank")) d.rerank_template = *v;
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
                          "tokenizer.ggml.seperator_token_id",
                          "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.fim_suf_token_id",
                          "tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.fim_rep_token_id",
                          "tokenizer.ggml.fim_sep_token_id", "tokenizer.ggml.prefix_token_id",
                          "tokenizer.ggml.suffix_token_id", "tokenizer.ggml.middle_token_id"}) {
    const int id = read_id(g, key, -1);
    if (id >= static_cast<int>(n)) fail(g, key, "= " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(n) + " tokens)");
  }
  // Defaults that do not exist in this vocabulary (e.g. gpt2's 11 in a tiny vocab) are dropped.
  for (int* id : {&d.bos_id, &d.eos_id, &d.eot_id, &d.unk_id, &d.pad_id, &d.sep_id}) {
    if (*id >= static_cast<int>(n)) *id = -1;
  }
  // Control and user-defined tokens are the added tokens (content as stored: not byte-encoded).
  if (!d.types.empty()) {
    for (size_t i = 0; i < n; ++i) {
      if (d.types[i] == tok::TokenType::kControl || d.types[i] == tok::TokenType::kUserDefined) {
        d.added.push_back({static_cast<int>(i), d.tokens[i], d.types[i] == tok::TokenType::kControl});
      }
    }
  }
  tok::finalize_vocab(d);
  return d;
}

}  // namespace anelm::server
