// anelm's "infill" filter (engine/sampler.cpp) against llama.cpp's own: the chain top_k -> top_p ->
// infill run by libllama from the peer kit (tests/server/peer/llamacpp_infill_chain.c, built here
// with gcc) over the same candidates, with Qwen2.5's real token texts and end-of-generation tokens.
// Hundreds of random distributions, built so that every branch of the filter is taken (only the ends
// kept, text tokens merged by prefix and thresholded, nothing left but the end token); anelm's draws
// must come from llama.cpp's survivors with llama.cpp's probabilities.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "engine/sampler.h"
#include "server/fim_prompt.h"
#include "server/model_bundle.h"
#include "tests/support/shared_data.h"

namespace anelm::testing {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::vector<int> ids;       // candidates (vocabulary ids)
  std::vector<float> logits;  // theirs
};

// Builds the reference driver against the installed peer kit; empty when it cannot.
std::string build_reference(const fs::path& dir, std::string& why) {
  const auto shared = shared_dir();
  if (!shared || !fs::exists(*shared / "peers/bin/llamacpp-generate")) {
    why = "../shared/peers not found";
    return {};
  }
  // Any peer tool installs the kit (prebuilt libllama and its headers) on first use.
  if (std::system((shell_quote((*shared / "peers/bin/llamacpp-generate").string()) + " --help >/dev/null 2>&1").c_str()) != 0) {
    why = "the llama.cpp peer kit is not installed";
    return {};
  }
  const char* env = std::getenv("ANELM_PEER_DIR");
  const char* home = std::getenv("HOME");
  const fs::path peer = env ? fs::path(env) : fs::path(home ? home : "") / ".cache/anelm-peer";
  const fs::path out = dir / "llamacpp_infill_chain";
  const std::string src = std::string(ANELM_SOURCE_DIR) + "/tests/server/peer/llamacpp_infill_chain.c";
  const std::string cmd =
      "P=" + shell_quote(peer.string()) + "; L=$(dirname \"$(ls \"$P\"/node_modules/@node-llama-cpp/*/bins/*/libllama.v*.so | head -n1)\") && "
      "G=$(cd \"$L\" && ls libggml.v*.so libggml.so 2>/dev/null | head -n1) && "
      "gcc -O2 -std=gnu11 " + shell_quote(src) + " -I\"$P/include\" -L\"$L\" -l:\"$(cd \"$L\" && ls libllama.v*.so | head -n1)\" "
      "-l:\"$G\" -l:libggml-base.so -Wl,-rpath,\"$L\" -lm -o " + shell_quote(out.string()) + " 2>" +
      shell_quote((dir / "gcc.log").string());
  if (std::system(cmd.c_str()) != 0) {
    why = "could not build the reference driver (gcc and the peer's libllama): see " + (dir / "gcc.log").string();
    return {};
  }
  return out.string();
}

TEST(InfillSampler, SurvivorsAndProbabilitiesAreLlamaCpps) {
  const auto tokenizer_dir = shared_model("qwen2.5-0.5b-instruct");
  if (!tokenizer_dir) GTEST_SKIP() << "shared test data not found: ../shared/models/qwen2.5-0.5b-instruct";
  const fs::path dir = make_temp_dir("infill-sampler");
  std::string why;
  const std::string driver = build_reference(dir, why);
  if (driver.empty()) GTEST_SKIP() << why;
  // The vocabulary as both sides read it: a GGUF with Qwen2.5's tokenizer.
  const std::string model = (dir / "vocab.gguf").string();
  const std::string make = anelm_binary().string() + " make-model --arch qwen2 --shape tiny --dtype f32 --seed 1 " +
                           "--tokenizer-from " + tokenizer_dir->string() + " --out " + model + " >/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  const auto tk = server::load_tokenizer(model);
  const auto vocab = server::build_infill_vocab(*tk);
  ASSERT_TRUE(vocab);

  // Candidates whose texts start one another (so the merge has work), the end-of-generation tokens,
  // and random others.
  std::vector<int> related;
  for (const char* w : {" return", " ret", " re", " r", " print", " pr", " p", " def", " de", " d", "self", "se", "s",
                        " if", " i", " in", " int", " import", " im", "(", "((", ")", "):", "\n", "\n\n", "    ",
                        "        ", " =", " ==", " x", " y", " xy"}) {
    const std::vector<int> ids = tk->encode(w, false);
    if (ids.size() == 1) related.push_back(ids[0]);
  }
  ASSERT_GE(related.size(), 20u);
  const std::vector<int>& ends = tk->vocab().eog_ids;
  ASSERT_FALSE(ends.empty());
  std::mt19937 rng(2026);
  std::vector<Case> cases;
  for (int c = 0; c < 300; ++c) {
    Case k;
    std::vector<int> ids = related;
    ids.insert(ids.end(), ends.begin(), ends.end());
    std::uniform_int_distribution<int> any(0, 150000);
    while (ids.size() < 48) ids.push_back(any(rng));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    const float spread = std::array{0.3f, 1.0f, 2.0f, 4.0f}[c % 4];
    const float end_level = std::uniform_real_distribution<float>(-8.0f, 1.0f)(rng);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    for (int id : ids) {
      const bool is_end = std::find(ends.begin(), ends.end(), id) != ends.end();
      k.ids.push_back(id);
      k.logits.push_back(is_end ? end_level + noise(rng) : spread * noise(rng));
    }
    cases.push_back(std::move(k));
  }

  // llama.cpp's survivors per case.
  const fs::path in = dir / "cases.txt", out = dir / "ref.txt";
  {
    std::ofstream f(in);
    for (const Case& k : cases) {
      for (size_t i = 0; i < k.ids.size(); ++i) f << (i ? " " : "") << k.ids[i] << ":" << k.logits[i];
      f << "\n";
    }
  }
  const std::string run = shell_quote(driver) + " " + shell_quote(model) + " 40 0.95 < " + shell_quote(in.string()) +
                          " > " + shell_quote(out.string());
  ASSERT_EQ(std::system(run.c_str()), 0) << run;
  std::ifstream ref(out);

  // anelm over the same candidates, as a compact vocabulary of 48 (their texts and end flags kept).
  int ends_only = 0, end_token = 0, with_text = 0;
  for (const Case& k : cases) {
    std::string line;
    ASSERT_TRUE(std::getline(ref, line));
    std::map<int, double> want;
    std::istringstream ls(line);
    for (std::string item; ls >> item;) want[std::stoi(item.substr(0, item.find(':')))] = std::stod(item.substr(item.find(':') + 1));
    ASSERT_FALSE(want.empty()) << line;

    auto local = std::make_shared<engine::InfillVocab>();
    std::vector<float> logits = k.logits;
    std::vector<int> id_of = k.ids;  // local index -> vocabulary id
    for (int id : k.ids) {
      local->pieces.push_back(vocab->pieces[static_cast<size_t>(id)]);
      local->eog.push_back(vocab->eog[static_cast<size_t>(id)]);
    }
    auto end_at = std::find(id_of.begin(), id_of.end(), vocab->end_id);
    ASSERT_NE(end_at, id_of.end());
    local->end_id = static_cast<int>(end_at - id_of.begin());

    engine::SamplingParams p;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.temperature_last = true;
    p.infill = local;
    engine::Rng r(static_cast<uint64_t>(&k - cases.data()));
    engine::SampleScratch scratch;
    constexpr int kDraws = 4000;
    std::map<int, int> got;
    for (int d = 0; d < kDraws; ++d) got[id_of[static_cast<size_t>(engine::sample(logits, p, {}, r, scratch))]]++;
    for (const auto& [id, n] : got) EXPECT_TRUE(want.count(id)) << "case " << (&k - cases.data()) << ": drew " << id << " (" << n << "), not a survivor: " << line;
    for (const auto& [id, q] : want) {
      const double f = static_cast<double>(got[id]) / kDraws;
      EXPECT_NEAR(f, q, 5 * std::sqrt(q * (1 - q) / kDraws) + 0.004) << "case " << (&k - cases.data()) << " id " << id << ": " << line;
    }
    // Greedy with the temperature last: llama.cpp's best survivor.
    engine::SamplingParams g = p;
    g.temperature = 0.0f;
    const int best = std::max_element(want.begin(), want.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    EXPECT_EQ(id_of[static_cast<size_t>(engine::sample(logits, g, {}, r, scratch))], best) << line;

    bool all_ends = true;
    for (const auto& [id, q] : want) all_ends = all_ends && vocab->eog[static_cast<size_t>(id)];
    if (want.size() == 1 && want.begin()->first == vocab->end_id) ++end_token;
    else if (all_ends) ++ends_only;
    else ++with_text;
  }
  // Every branch was taken often enough to mean something.
  EXPECT_GE(ends_only, 20);
  EXPECT_GE(end_token, 20);
  EXPECT_GE(with_text, 20);
  std::printf("infill cases: %d only ends, %d end token, %d with text tokens\n", ends_only, end_token, with_text);
}

}  // namespace
}  // namespace anelm::testing
