// Reads model presets and picks the one whose match strings occur in the model's path.
#include "server/model_preset.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"

namespace anelm::server {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

[[noreturn]] void bad(const std::string& source, const std::string& what) {
  throw Error(ErrorKind::kInvalidArgument, source + ": " + what);
}

float number_in(const json& s, const char* key, double lo, double hi, float fallback, const std::string& src) {
  if (!s.contains(key)) return fallback;
  const json& v = s.at(key);
  if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi)
    bad(src, std::string("sampling.") + key + " must be a number in [" + std::to_string(lo) + ", " +
                 std::to_string(hi) + "]");
  return v.get<float>();
}

void parse_sampling(const json& s, engine::SamplingParams& p, const std::string& src) {
  if (!s.is_object()) bad(src, "'sampling' must be an object");
  static const char* kKeys[] = {"temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                                "presence_penalty", "frequency_penalty"};
  for (auto it = s.begin(); it != s.end(); ++it)
    if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return it.key() == k; }) ==
        std::end(kKeys))
      bad(src, "unknown key 'sampling." + it.key() + "'");
  p.temperature = number_in(s, "temperature", 0.0, 2.0, p.temperature, src);
  p.top_p = number_in(s, "top_p", 0.0, 1.0, p.top_p, src);
  p.top_k = static_cast<int>(number_in(s, "top_k", 0, 1 << 20, static_cast<float>(p.top_k), src));
  p.min_p = number_in(s, "min_p", 0.0, 1.0, p.min_p, src);
  p.repetition_penalty = number_in(s, "repetition_penalty", 0.01, 10.0, p.repetition_penalty, src);
  p.presence_penalty = number_in(s, "presence_penalty", -2.0, 2.0, p.presence_penalty, src);
  p.frequency_penalty = number_in(s, "frequency_penalty", -2.0, 2.0, p.frequency_penalty, src);
}

}  // namespace

ModelPreset parse_model_preset(const std::string& text, const std::string& source) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) bad(source, "not a JSON object");
  ModelPreset p;
  p.source = source;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k.starts_with("_")) continue;
    if (k == "name") {
      if (!it->is_string()) bad(source, "'name' must be a string");
      p.name = it->get<std::string>();
    } else if (k == "match") {
      if (!it->is_array()) bad(source, "'match' must be an array of strings");
      for (const json& m : *it) {
        if (!m.is_string() || m.get<std::string>().empty()) bad(source, "'match' must hold non-empty strings");
        p.match.push_back(lower(m.get<std::string>()));
      }
    } else if (k == "sampling") {
      parse_sampling(*it, p.sampling, source);
    } else {
      bad(source, "unknown key '" + k + "'");
    }
  }
  if (p.name.empty()) bad(source, "'name' is required");
  if (p.match.empty()) bad(source, "'match' needs at least one string");
  return p;
}

ModelPreset find_model_preset(const std::string& dir, const std::string& model_path) {
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return {};
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  const std::string path = lower(model_path);
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    ModelPreset p = parse_model_preset(ss.str(), f.string());
    for (const std::string& m : p.match)
      if (path.find(m) != std::string::npos) return p;
  }
  return {};
}

}  // namespace anelm::server
