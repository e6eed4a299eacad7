// Tokenizer side of the model maker: read a GGUF/HF/synthetic vocab, emit GGUF keys or HF files.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace anelm::engine {
class GgufFile;
class GgufWriter;
}  // namespace anelm::engine

namespace anelm::tools {



// A byte-level BPE (or, from a GGUF, any) vocabulary in llama.cpp's terms.
struct MakerVocab {
  std::vector<std::string> tokens;   // id -> text (GPT-2 byte-level encoded)
  std::vector<int32_t> types;        // GGUF token types: 1 normal, 3 control, 4 user-defined, 5 unused
  std::vector<std::string> merges;   // "a b" in rank order
  int bos = -1, eos = -1, pad = -1;
  bool add_bos = false;
  std::string chat_template;
  std::shared_ptr<engine::GgufFile> gguf;    // GGUF source: its tokenizer.* keys are copied verbatim
  std::string hf_dir;                // HF source: its tokenizer files are copied for HF output
  bool paddable = true;              // false for a GGUF source (keys are copied as they are)
};

// `source`: "" for a synthetic 509-token byte-level BPE + 3 ChatML specials (512 ids); a .gguf
// file; or an HF directory (vocab.json + merges.txt, or tokenizer.json; tokenizer_config.json).
MakerVocab load_maker_vocab(const std::string& source);

// Pads with "[PADn]" unused tokens up to `vocab_size` (no-op when already that size).
void pad_maker_vocab(MakerVocab& v, int vocab_size);

// Adds tokenizer.* keys (model gpt2, pre qwen2, tokens, token_type, merges, ids, chat template).
// `pre` non-empty: tokenizer.ggml.pre is that (also over a GGUF source's), e.g. GPT-2's "gpt-2".
void add_maker_vocab_to_gguf(const MakerVocab& v, engine::GgufWriter& w, const std::string& pre = "");

// Writes (or copies) vocab.json, merges.txt, tokenizer.json and tokenizer_config.json into `dir`.
void write_maker_vocab_hf(const MakerVocab& v, const std::string& dir);

}  // namespace anelm::tools
