// Plain tokenizer data, filled from tokenizer.json, vocab.json + merges.txt, or GGUF metadata (by the caller).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anelm::tok {

enum class VocabKind {
  kByteLevelBpe,     // GPT-2 style byte-level BPE (Qwen2, Llama-3); GGUF tokenizer.ggml.model = "gpt2"
  kSentencePiece,    // SentencePiece BPE with scores and <0xNN> byte fallback; GGUF model = "llama"
};

enum class PreTokenizer { kQwen2, kLlama3, kGpt2, kNone };

// Token attributes as in GGUF tokenizer.ggml.token_type.
enum class TokenType : int32_t {
  kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

struct VocabData {
  VocabKind kind = VocabKind::kByteLevelBpe;
  PreTokenizer pre = PreTokenizer::kQwen2;
  std::vector<std::string> tokens;        // id -> token text (byte-level encoded for BPE, "▁" for SPM)
  std::vector<float> scores;              // SPM merge scores (empty for BPE)
  std::vector<TokenType> types;           // empty: all kNormal except added tokens below
  std::vector<std::string> merges;        // BPE merges "a b", in rank order
  // Added/special tokens matched as whole strings in text when special parsing is on.
  struct Added { int id; std::string content; bool special; };
  std::vector<Added> added;
  int bos_id = -1, eos_id = -1, eot_id = -1, unk_id = -1, pad_id = -1;
  bool add_bos = false;                   // the model's rule for raw prompts
  bool add_space_prefix = true;           // SPM: prepend "▁" to the text (llama)
  std::vector<int> eog_ids;               // all end-of-generation ids (eos, eot, <|im_end|>, ...)
  std::string chat_template;              // Jinja source from the model, empty if none
};

}  // namespace anelm::tok
