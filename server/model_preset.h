// Model presets (configs/models/*.json): per-model sampling defaults for fields a request leaves out.
#pragma once

#include <string>
#include <vector>

#include "engine/sampler.h"

namespace anelm::server {

struct ModelPreset {
  std::string name;                   // "" when no preset applies
  std::string source;                 // file it came from
  std::vector<std::string> match;     // lower-case substrings of the model path that select it
  engine::SamplingParams sampling;    // defaults; a request's own fields override them
};

// Parses one preset file's text; throws anelm::Error(kInvalidArgument) naming `source` and the key.
ModelPreset parse_model_preset(const std::string& json_text, const std::string& source);

// The first preset in `dir` (files in name order) one of whose `match` strings occurs in the
// lower-cased model path; a preset with no match when none does. A missing dir is no preset.
ModelPreset find_model_preset(const std::string& dir, const std::string& model_path);

}  // namespace anelm::server
