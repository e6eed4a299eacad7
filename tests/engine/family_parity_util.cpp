// See family_parity.h.
#include "tests/engine/family_parity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "tests/engine/llamacpp_parity.h"
#include "tests/support/shared_data.h"
#include "tools/model_maker.h"

namespace anelm::engine {

namespace fs = std::filesystem;

nlohmann::json load_family_fixture(const std::string& name) {
  std::ifstream in(fs::path(ANELM_SOURCE_DIR) / "tests/data/engine" / name);
  return nlohmann::json::parse(in);
}

std::vector<int> fixture_prompt(const nlohmann::json& fx, const std::string& name) {
  const nlohmann::json& p = fx.at("prompts").at(name);
  if (p.is_array()) return p.get<std::vector<int>>();
  std::vector<int> ids;
  for (int64_t i = 1; i <= p["count"].get<int64_t>(); ++i) {
    ids.push_back(static_cast<int>((i * p["mul"].get<int64_t>() + p["add"].get<int64_t>()) % p["mod"].get<int64_t>()));
  }
  return ids;
}

std::string made_tiny(Arch arch, DType type, uint64_t seed) {
  static std::map<std::string, std::string> made;
  static const fs::path dir = anelm::testing::make_temp_dir("family-tiny");
  const std::string name = std::string(arch_name(arch)) + "-" + dtype_name(type) + "-" + std::to_string(seed) + ".gguf";
  if (auto it = made.find(name); it != made.end()) return it->second;
  tools::MakeModelOptions o;
  o.arch = arch;
  o.shape = "tiny";
  o.dtype = type;
  o.seed = seed;
  return made[name] = tools::make_model(o, (dir / name).string()).path;
}

std::unique_ptr<Engine> load_engine(const std::string& path, Backend backend, int ctx) {
  EngineOptions eo;
  eo.model_path = path;
  eo.backend = backend;
  eo.threads = 2;
  eo.ctx = ctx;
  return Engine::load(eo);
}

std::vector<int> greedy_ids(Engine& eng, const std::vector<int>& prompt, int n) {
  GenerateRequest req;
  req.prompt = prompt;
  req.max_tokens = n;
  req.sampling.temperature = 0;
  req.ignore_eos = true;
  return eng.generate(req, {}).ids;
}

namespace {

// Teacher-forced logits of every generated position: prompt + generated[:-1] in one forward.
std::vector<float> teacher_forced_logits(Engine& eng, const std::vector<int>& prompt, const std::vector<int>& gen, size_t& vocab) {
  std::vector<int> seq = prompt;
  seq.insert(seq.end(), gen.begin(), gen.end() - 1);
  const auto logits = eng.forward(seq, 0, /*all_logits=*/true);
  vocab = logits.size() / seq.size();
  return std::vector<float>(logits.begin() + static_cast<long>((prompt.size() - 1) * vocab), logits.end());
}

}  // namespace

void expect_f32_equal(Engine& eng, const nlohmann::json& fx, float rel_tol) {
  for (const auto& [name, expected] : fx.at("generated").at("f32").items()) {
    const auto gen = expected.get<std::vector<int>>();
    const auto prompt = fixture_prompt(fx, name);
    EXPECT_EQ(greedy_ids(eng, prompt, static_cast<int>(gen.size())), gen) << "f32 prompt '" << name << "'";
    const nlohmann::json& tf = fx.at("teacher_forced_f32").at(name);
    const auto top = tf["tf_top"].get<std::vector<int>>();
    const auto logit = tf["top_logit"].get<std::vector<double>>();
    size_t vocab = 0;
    const std::vector<float> rows = teacher_forced_logits(eng, prompt, gen, vocab);
    double worst = 0;
    for (size_t i = 0; i < gen.size(); ++i) {
      const float* row = rows.data() + i * vocab;
      EXPECT_EQ(std::max_element(row, row + vocab) - row, top[i]) << name << " step " << i;
      worst = std::max(worst, std::abs(row[top[i]] - logit[i]) / std::max(1.0, std::abs(logit[i])));
    }
    EXPECT_LT(worst, rel_tol) << name << ": max relative |anelm - llama.cpp| logit of llama.cpp's top id";
  }
}

void expect_rounded_parity(Engine& eng, const nlohmann::json& fx, const std::string& type, float logit_scale,
                           const std::string& label) {
  ParityRules rules = load_parity_rules();
  rules.near_tie /= logit_scale;
  rules.clear_lead /= logit_scale;
  rules.logit_tol /= logit_scale;
  int agree = 0, floor = 0, steps = 0;
  for (const auto& [name, expected] : fx.at("generated").at(type).items()) {
    const nlohmann::json& tf = fx.at("teacher_forced_" + type).at(name);
    const LlamaCppPath p{fixture_prompt(fx, name), expected.get<std::vector<int>>(), tf["tf_top"].get<std::vector<int>>(),
                         tf["top_logit"].get<std::vector<double>>(), tf["margin"].get<std::vector<double>>()};
    const ParityFigures f = expect_llamacpp_parity(eng, p, rules, label + " " + type + " " + name);
    const int n = static_cast<int>(p.generated.size()), fa = tf["fa_off_agrees"].get<int>();
    agree += f.agree, floor += fa, steps += n;
    std::printf("[%s %s %s] free-running ids equal for %zu (llama.cpp's first near tie), teacher-forced top-1 "
                "agreement %d/%d (llama.cpp fa off vs on: %d/%d)\n",
                label.c_str(), type.c_str(), name.c_str(), f.clear, f.agree, n, fa, n);
  }
  EXPECT_GE(agree, floor - 1) << label << " " << type << ": teacher-forced top-1 agreement over " << steps << " steps";
}

void copy_gguf(const std::string& src, const std::string& dst,
               const std::function<std::optional<std::string>(const std::string&)>& key, const std::string& arch,
               const std::function<bool(const std::string&)>& keep_tensor) {
  auto g = GgufFile::open(src);
  GgufWriter w(static_cast<uint32_t>(g->alignment()));
  for (const std::string& k : g->keys()) {
    if (k == "general.architecture" && !arch.empty()) {
      w.add_string(k, arch);
    } else if (const std::optional<std::string> to = key(k)) {
      w.add_raw(*to, g->raw_value(k));
    }
  }
  std::vector<TensorView> views;
  for (const GgufTensorInfo& info : g->tensors()) {
    if (keep_tensor && !keep_tensor(info.name)) continue;
    views.push_back(g->tensor_view(info));
    const TensorView& v = views.back();
    w.add_tensor(info.name, v.dtype, std::vector<int64_t>(v.shape.begin(), v.shape.begin() + v.ndim));
  }
  w.begin(dst);
  for (const TensorView& v : views) w.write_data(v.data, static_cast<size_t>(v.nbytes));
  w.finish();
}

}  // namespace anelm::engine
