// libFuzzer target: the GGUF reader (header, metadata, tensor infos, views), the GGUF -> ModelConfig
// mapping and validation, and the GGUF -> tokenizer vocabulary bridge.
// Only anelm::Error (and std::invalid_argument from the vocab bridge) may escape the readers.
#include <cstdint>
#include <stdexcept>

#include "engine/config_gguf.h"
#include "engine/error.h"
#include "engine/gguf.h"
#include "server/gguf_vocab.h"
#include "tests/fuzz/fuzz_util.h"
#include "tokenizer/tokenizer.h"

using namespace anelm;
using namespace anelm::engine;

namespace {

// Reads every metadata value through the getter matching its type, and the wrong ones too.
void read_metadata(const GgufFile& g) {
  for (const std::string& key : g.keys()) {
    (void)g.type_of(key);
    (void)g.raw_value(key);
    try { (void)g.get_string(key); } catch (const Error&) {}
    try { (void)g.get_int(key); } catch (const Error&) {}
    try { (void)g.get_float(key); } catch (const Error&) {}
    try { (void)g.get_bool(key); } catch (const Error&) {}
    try {
      if (g.array_size(key) > (1u << 16)) continue;  // large arrays were walked once at open
      (void)g.array_type_of(key);
      (void)g.get_string_array(key);
    } catch (const Error&) {}
    try { (void)g.get_int_array(key); } catch (const Error&) {}
    try { (void)g.get_float_array(key); } catch (const Error&) {}
  }
}

void read_tensors(const GgufFile& g) {
  volatile uint8_t sink = 0;
  for (const GgufTensorInfo& t : g.tensors()) {
    (void)g.find_tensor(t.name);
    try {
      TensorView v = g.tensor_view(t);
      if (v.nbytes > 0) {  // first and last byte of the view must be inside the mapping
        const auto* p = static_cast<const uint8_t*>(v.data);
        sink = sink ^ p[0] ^ p[v.nbytes - 1];
      }
    } catch (const Error&) {}
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file;
  file.write(data, size);
  std::unique_ptr<GgufFile> g;
  try {
    g = GgufFile::open(file.path());
  } catch (const Error&) {
    return 0;
  }
  read_metadata(*g);
  read_tensors(*g);
  try {
    config_from_gguf(*g).validate(g->path());
  } catch (const Error&) {}
  try {
    std::unique_ptr<tok::Tokenizer> t = tok::Tokenizer::create(server::vocab_from_gguf(*g));
    const std::vector<int> ids = t->encode("Hello world! <|im_end|> </s> 123 ", true);
    (void)t->decode(ids, false);
  } catch (const std::invalid_argument&) {  // tok::TokenizerError and the bridge's own errors
  } catch (const Error&) {
  }
  return 0;
}
