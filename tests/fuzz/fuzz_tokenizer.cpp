// libFuzzer target: encode and decode with two small real vocabularies from shared/models (SPM:
// ggml-vocab-llama-spm.gguf; byte-level BPE: ggml-vocab-qwen2.gguf) and a hand-made BERT WordPiece
// one (with and without its normalizer). Every id encode returns is in range, and decode / the
// stream decoder accept any ids.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/gguf.h"
#include "server/gguf_vocab.h"
#include "tests/fuzz/fuzz_util.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

using namespace anelm;

namespace {

std::vector<std::unique_ptr<tok::Tokenizer>> g_tokenizers;

// WordPiece pieces over ASCII, accented, CJK and multi-byte text, [UNK] and the special tokens.
tok::VocabData wordpiece_vocab(bool normalize) {
  tok::VocabData v;
  v.kind = tok::VocabKind::kWordPiece;
  v.pre = tok::PreTokenizer::kNone;
  v.tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "▁a", "a", "▁ab", "b", "▁,", "▁!",
              "▁'", "s", "▁é", "é", "▁中", "▁ᄒ", "▁🦙", "🦙", "▁\xC3", "▁"};
  v.types.assign(v.tokens.size(), tok::TokenType::kNormal);
  for (int id = 0; id <= 4; ++id) v.types[id] = tok::TokenType::kControl;
  v.unk_id = 1, v.bos_id = 2, v.sep_id = 3, v.pad_id = 0;
  v.add_bos = v.add_sep = true;
  v.add_space_prefix = false;
  v.clean_spaces = true;
  v.normalize_lowercase = v.normalize_strip_accents = normalize;
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-qwen2.gguf"}) {
    const std::string path = fuzz::shared_model(name);
    if (path.empty()) {
      std::fprintf(stderr, "fuzz_tokenizer: shared/models/%s not found (set ANELM_SHARED_DIR)\n", name);
      std::exit(2);
    }
    auto g = engine::GgufFile::open(path);
    g_tokenizers.push_back(tok::Tokenizer::create(server::vocab_from_gguf(*g)));
  }
  g_tokenizers.push_back(tok::Tokenizer::create(wordpiece_vocab(true)));
  g_tokenizers.push_back(tok::Tokenizer::create(wordpiece_vocab(false)));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool parse_special = data[0] & 1, skip_special = data[0] & 2;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  for (const auto& t : g_tokenizers) {
    const int n = t->vocab_size();
    const std::vector<int> ids = t->encode(text, parse_special);
    for (int id : ids) {
      if (id < 0 || id >= n) {
        std::fprintf(stderr, "encode returned id %d outside [0, %d)\n", id, n);
        std::abort();
      }
    }
    (void)t->decode(ids, skip_special);
    (void)tok::add_special_tokens(t->vocab(), ids);
    // The input's bytes as ids (little-endian u16 pairs, wrapped into the vocabulary).
    std::vector<int> raw;
    for (size_t i = 1; i + 1 < size; i += 2) raw.push_back((data[i] | data[i + 1] << 8) % n);
    (void)t->decode(raw, skip_special);
    tok::StreamDecoder sd(*t, {}, skip_special);
    for (int id : raw) (void)sd.push(id);
    (void)sd.flush();
    for (int id : raw) (void)t->token_bytes(id);
  }
  return 0;
}
