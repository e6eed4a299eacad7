// See llamacpp_parity.h.
#include "tests/engine/llamacpp_parity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace anelm::engine {

ParityRules load_parity_rules() {
  std::ifstream in(std::filesystem::path(ANELM_SOURCE_DIR) / "tests/data/engine/llamacpp_parity_rules.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  return {j.at("near_tie").get<double>(), j.at("clear_lead").get<double>(), j.at("logit_tol").get<double>()};
}

ParityFigures expect_llamacpp_parity(Engine& eng, const LlamaCppPath& p, const ParityRules& rules, const std::string& name) {
  ParityFigures f;
  const int n = static_cast<int>(p.generated.size());
  while (f.clear < p.generated.size() && p.margin[f.clear] >= rules.near_tie && p.tf_top[f.clear] == p.generated[f.clear]) {
    ++f.clear;
  }
  GenerateRequest req;
  req.prompt = p.prompt;
  req.max_tokens = n;
  req.sampling.temperature = 0;
  req.ignore_eos = true;
  const auto got = eng.generate(req, {}).ids;
  const auto first = [&](const std::vector<int>& ids) { return std::vector<int>(ids.begin(), ids.begin() + static_cast<long>(f.clear)); };
  EXPECT_EQ(first(got), first(p.generated)) << name << ": first " << f.clear << " ids (no near tie before)";

  // Teacher-forced over llama.cpp's sequence: all logits in one forward.
  std::vector<int> seq = p.prompt;
  seq.insert(seq.end(), p.generated.begin(), p.generated.end() - 1);
  const auto logits = eng.forward(seq, 0, /*all_logits=*/true);
  const size_t vocab = logits.size() / seq.size();
  for (int i = 0; i < n; ++i) {
    const float* row = logits.data() + (p.prompt.size() - 1 + static_cast<size_t>(i)) * vocab;
    const int top = static_cast<int>(std::max_element(row, row + vocab) - row);
    f.agree += top == p.tf_top[i];
    if (p.margin[i] >= rules.clear_lead) {
      EXPECT_EQ(top, p.tf_top[i]) << name << " step " << i << " (llama.cpp lead " << p.margin[i] << ")";
      ++f.checked;
    }
    EXPECT_NEAR(row[p.tf_top[i]], p.top_logit[i], rules.logit_tol) << name << " step " << i;
  }
  return f;
}

}  // namespace anelm::engine
