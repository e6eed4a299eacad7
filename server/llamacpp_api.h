// llama.cpp's own completion API (llama-server's /completion and /infill, which editor plugins such
// as llama.vim and llama.vscode speak): its request fields and its response shape.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampler.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/fim_prompt.h"
#include "server/generation.h"

namespace anelm::server {

struct LlamaCppRequest {
  GenerationFields gen;   // sampling, stop, stream, grammar / json_schema, n (n_cmpl)
  // llama.cpp's prompt forms: a string, token ids, or both mixed in one array (strings are
  // tokenized, ids kept). /completion: one or several prompts (one result each). /infill: `prompt`
  // is the text after the prefix on the cursor's line; may be absent.
  std::vector<nlohmann::ordered_json> prompts;
  nlohmann::ordered_json prompt;
  nlohmann::ordered_json input_prefix, input_suffix;  // /infill, same forms as prompt
  std::vector<InfillInput::Chunk> input_extra;        // /infill
  nlohmann::ordered_json logit_bias;  // [[id or text, bias or false], ...] or {"id": bias}; null: none
  std::vector<std::string> samplers;  // the chain, as named in the request (llama.cpp's default otherwise)
  bool infill_sampler = false;        // "infill" in samplers (the handler gives it the vocabulary)
  bool ignore_eos = false;
  bool return_tokens = false;
  LineLimits limits;                       // n_indent, t_max_predict_ms
  std::vector<std::string> response_fields;  // "a/b" paths to keep; empty: the whole result
};

// Parses /completion (infill = false) or /infill; throws ApiError (400, param = the field). Fields
// a local server has no use for (id_slot, cache_prompt, t_max_prompt_ms, n_keep, ...) are accepted
// and logged; those that would change the output and are not implemented (mirostat, dry, xtc,
// typical_p, post_sampling_probs, lora, ...) are a 400 naming them.
LlamaCppRequest parse_llamacpp_request(std::string_view body, const engine::SamplingParams& defaults, bool infill);

// What a llama.cpp result reports besides the output.
struct LlamaCppMeta {
  std::string model;
  std::vector<std::string> prompts;          // each prompt as text (result i reports prompts[i / n])
  int n = 1;                                 // results per prompt (n_cmpl)
  std::vector<std::string> response_fields;
  nlohmann::ordered_json generation_settings;
  bool return_tokens = false;
  bool probs = false;                        // n_probs > 0: completion_probabilities
};

// The `generation_settings` a result reports: the sampling that ran.
nlohmann::ordered_json llamacpp_generation_settings(const LlamaCppRequest& r, const engine::SamplingParams& s,
                                                    int n_predict);

// llama.cpp's result objects: one per choice (an array when there are several), streamed as
// `data: {...}` events ending with the full result (stop: true) and no [DONE].
std::unique_ptr<ResponseSerializer> make_llamacpp_serializer(LlamaCppMeta meta);

}  // namespace anelm::server
