// llamacpp-embed runs and the vector checks of the embedding tests (peer_embed.h).
#include "peer_embed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/shared_data.h"

namespace anelm::testing {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<json> run_peer_script(const std::string& script, const std::string& model, const json& input,
                                    const std::string& fa) {
  const auto shared = shared_dir();
  if (!shared || !fs::exists(*shared / "peers/install.sh") || std::system("command -v node >/dev/null") != 0)
    return std::nullopt;
  const fs::path kit = *shared / "peers";
  const fs::path in = make_temp_dir("peer-input") / "input.json";
  std::ofstream(in) << input.dump();
  const std::string install = shell_quote((kit / "install.sh").string());
  const std::string cmd = "(" + install + " --check || " + install + ") >&2 && node " +
                          shell_quote(std::string(ANELM_SOURCE_DIR) + "/tests/server/" + script) + " " +
                          shell_quote(kit.string()) + " " + shell_quote(model) + " " + shell_quote(in.string()) + " " +
                          fa + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << cmd;
  json j = json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    ADD_FAILURE() << script << " output: " << out.substr(0, 300);
    return json::object();
  }
  return j;
}

std::optional<std::vector<std::vector<float>>> peer_embed(const std::string& model, const std::vector<std::string>& texts,
                                                          const std::string& fa) {
  const auto j = run_peer_script("peer_embed.mjs", model, texts, fa);
  if (!j) return std::nullopt;
  if (!j->contains("embeddings")) return std::vector<std::vector<float>>{};
  return (*j)["embeddings"].get<std::vector<std::vector<float>>>();
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

double l2_norm(const std::vector<float>& a) {
  double s = 0;
  for (float x : a) s += double(x) * x;
  return std::sqrt(s);
}

std::vector<std::vector<float>> embedding_vectors(const httplib::Result& r) {
  std::vector<std::vector<float>> out;
  if (!r || r->status != 200) {
    ADD_FAILURE() << "embeddings request failed: " << (r ? std::to_string(r->status) + " " + r->body : "no response");
    return out;
  }
  const json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "list");
  for (size_t i = 0; i < j["data"].size(); ++i) {
    EXPECT_EQ(j["data"][i]["object"], "embedding");
    EXPECT_EQ(j["data"][i]["index"], i);
    out.push_back(j["data"][i]["embedding"].get<std::vector<float>>());
  }
  return out;
}

}  // namespace anelm::testing
