// Fill-in-the-middle prompts: /v1/completions `suffix` and llama.cpp's /infill (what code-completion
// clients send).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sampler.h"
#include "tokenizer/tokenizer.h"

namespace anelm::server {

// [BOS when the model adds one] FIM_PRE prefix FIM_SUF suffix FIM_MID: the prefix-suffix-middle
// order llama.cpp's /infill writes and coder models (Qwen2.5-Coder, StarCoder, CodeLlama, DeepSeek
// Coder) are trained on; the model then writes the middle and ends with an end-of-generation token.
// The suffix is tokenized as plain text (a marker written in the code stays text, as llama.cpp does).
// Throws ApiError (400, param "suffix") when the vocabulary has no FIM markers.
std::vector<int> fim_prompt(const tok::Tokenizer& tk, const std::vector<int>& prefix, std::string_view suffix);

// What an /infill request brings: the code before and after the cursor, the start of the cursor's
// line (`prompt`, llama.cpp's name), and other files' snippets as context.
struct InfillInput {
  std::vector<int> prefix, suffix, prompt;
  struct Chunk {
    std::string filename, text;
  };
  std::vector<Chunk> extra;
};

// llama.cpp's /infill prompt, token for token (its repository-level layout, arXiv 2409.12186):
//   [FIM_REP "myproject\n"] per chunk: (FIM_SEP filename "\n" | "\n\n--- snippet ---\n\n") text
//   [FIM_SEP "filename\n"] [BOS] FIM_PRE prefix prompt FIM_SUF suffix FIM_MID
// Within a budget of min(2048, n_ctx / 2) tokens (llama.cpp's batch) the prefix keeps its last
// 3/4, the suffix its first 1/4 less the prompt; the context chunks keep their last tokens within
// what the context has left after that budget, twice `n_predict` (when > 0) and the markers.
// Throws ApiError (400) when the vocabulary has no FIM markers.
std::vector<int> infill_prompt(const tok::Tokenizer& tk, const InfillInput& in, int n_ctx, int n_predict);

// The "infill" sampler's view of the vocabulary (each token's text, "" for control tokens; the
// end-of-generation ids; EOT, else EOS, to end with). Null when the vocabulary has no FIM markers.
std::shared_ptr<const engine::InfillVocab> build_infill_vocab(const tok::Tokenizer& tk);

}  // namespace anelm::server
