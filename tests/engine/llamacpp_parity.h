// Holding anelm against llama.cpp's recorded greedy path on random-weight models, which are chaotic
// under activation quantisation: the rules of tests/data/engine/llamacpp_parity_rules.json (also
// applied by bench/parity_llamacpp.py to the full-size shapes).
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"

namespace anelm::engine {

struct ParityRules {
  double near_tie, clear_lead, logit_tol;
};
ParityRules load_parity_rules();

// llama.cpp on one prompt: its free-running greedy ids, and teacher-forced over prompt +
// generated[:-1] its top id, that id's logit and its lead over the second at each generated position.
struct LlamaCppPath {
  std::vector<int> prompt, generated, tf_top;
  std::vector<double> top_logit, margin;
};

struct ParityFigures {
  size_t clear = 0;  // generated ids compared free-running: up to llama.cpp's first near tie
  int agree = 0;     // teacher-forced steps where anelm's top id is llama.cpp's
  int checked = 0;   // of those, steps with a clear lead (where agreement is required)
};

// Expects (gtest) anelm's greedy ids to equal llama.cpp's up to its first near tie, and teacher-forced
// on its path anelm's top id where llama.cpp's lead is clear, and the logit of its top id within
// logit_tol at every step. `name` labels the failures.
ParityFigures expect_llamacpp_parity(Engine& eng, const LlamaCppPath& p, const ParityRules& rules, const std::string& name);

}  // namespace anelm::engine
