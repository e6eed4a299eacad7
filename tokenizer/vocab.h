// Plain tokenizer data, filled from tokenizer.json, vocab.json + merges.txt, or GGUF metadata (by the caller).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anelm::tok {

enum class VocabKind {
  kByteLevelBpe,     // GPT-2 style byte-level BPE (Qwen2, Llama-3); GGUF tokenizer.ggml.model = "gpt2"
  kSentencePiece,    // SentencePiece BPE with scores and <0xNN> byte fallback; GGUF model = "llama"
  kWordPiece,        // BERT WordPiece, greedy longest match ("▁" marks word starts); GGUF model = "bert"
};

enum class PreTokenizer { kQwen2, kQwen35, kLlama3, kGpt2, kNone };

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
  int sep_id = -1;                        // separator ([SEP] in BERT): ends a WordPiece input
  // Fill-in-the-middle markers (prefix, suffix, middle): GGUF keys, else found by their text.
  int fim_pre_id = -1, fim_suf_id = -1, fim_mid_id = -1;
  // Repository-level FIM (Qwen2.5-Coder's <|repo_name|>, <|file_sep|>): the repository and file markers.
  int fim_rep_id = -1, fim_sep_id = -1;
  bool add_bos = false;                   // the model's rule for raw prompts
  bool add_eos = false;                   // append EOS to inputs (embedding models: Qwen3-Embedding)
  bool add_space_prefix = true;           // SPM: prepend "▁" to the text (llama)
  bool add_sep = false;                   // a separator between the two texts of a pair (a rerank query
                                          // and document: llama.cpp's add_sep_token); not used by
                                          // add_special_tokens, which follows llama_tokenize
  std::vector<int> eog_ids;               // all end-of-generation ids (eos, eot, <|im_end|>, ...)
  std::string chat_template;              // Jinja source from the model, empty if none
  std::string rerank_template;             // a reranker's prompt with {query} and {document} (GGUF
                                          // tokenizer.chat_template.rerank), empty if none

  // Additions (anelm tokenizer implementation).
  bool ignore_merges = false;             // byte-level BPE: emit a word whole if it is a token (Llama-3)
  bool normalize_nfc = false;             // apply NFC to text outside added tokens (Qwen2's normalizer)
  // WordPiece's BertNormalizer (GGUF tokenizer.ggml.normalizer.*; llama.cpp defaults both to true).
  bool normalize_lowercase = false;       // simple Unicode lower-casing
  bool normalize_strip_accents = false;   // each code point -> first of its NFD, accent marks dropped
  bool clean_spaces = false;              // decode: llama.cpp's clean_up_tokenization_spaces (" ," -> ",")
  std::string source;                     // file the data came from, for error messages
};

// Completes the derived fields the way llama.cpp's vocab loader does, after a loader filled the rest:
//  - `types` sized to `tokens` (kNormal by default; SPM "<0xNN>" -> kByte when no types were given);
//    each `added` entry that is still kNormal becomes kControl (special) or kUserDefined;
//  - tokens named like end-of-turn markers (<|im_end|>, <|endoftext|>, <|eot_id|>, <|end|>, ...)
//    become kControl, eot_id is filled from them when unset, and eog_ids = eos, eot and those
//    tokens (llama.cpp's text-based EOG list), sorted and unique;
//  - unset fim_*_id from the markers' texts (<|fim_prefix|>, <fim_prefix>, ▁<PRE>, <|repo_name|>, ...), as llama.cpp.
// Throws std::invalid_argument (naming data.source) for ids out of range.
void finalize_vocab(VocabData& data);

// `ids` with the special tokens llama.cpp's llama_tokenize(..., add_special = true) puts around a
// text's tokens: WordPiece always gets bos ([CLS]) first and sep ([SEP]) last, whatever add_bos and
// add_sep say (llama.cpp's WPM path ignores both); the other kinds get bos first when add_bos and eos
// last when add_eos. Ids that are -1 are left out. Nothing is deduplicated: a text that already
// starts with BOS gets a second one, as in llama.cpp.
std::vector<int> add_special_tokens(const VocabData& data, std::vector<int> ids);


}  // namespace anelm::tok
