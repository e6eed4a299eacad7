// `anelm compile` support: load a model and export its ANE programs; summary as JSON and text.
#include "tools/ane_compile.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/model_loader.h"

namespace anelm::tools {

using namespace engine;

AneCompileSummary compile_ane_programs(const std::string& model_path, const std::string& out_dir,
                                       const AneBackendOptions& opts,
                                       std::optional<DType> requant) {
  const std::unique_ptr<LoadedModel> model = load_model(model_path, requant);
  return export_ane_programs(model->config, model->weights, out_dir, opts);
}

std::string ane_compile_summary_json(const AneCompileSummary& s) {
  nlohmann::ordered_json j;
  j["model"] = s.model_name;
  if (!s.out_dir.empty()) j["out_dir"] = s.out_dir;
  j["weight_format"] = s.weight_format;
  j["seq_buckets"] = s.seq_buckets;
  j["n_layers"] = s.n_layers;
  j["ane_layers"] = s.ane_layers;
  j["programs_per_layer"] = s.programs_per_layer;
  j["lm_head_chunks"] = s.lm_head_chunks;
  j["programs_per_decode_token"] = s.programs_per_decode_token;
  j["total_programs"] = s.total_programs;
  j["compile_budget"] = s.compile_budget;
  j["fits_budget"] = s.fits_budget;
  j["total_weight_bytes"] = s.total_weight_bytes;
  j["weight_bytes_exact"] = s.weight_bytes_exact;
  if (!s.out_dir.empty()) {
    j["build_ms"] = s.build_ms;
    j["programs"] = s.program_names;
  }
  return j.dump();
}

std::string ane_compile_summary_text(const AneCompileSummary& s) {
  std::ostringstream o;
  o << "model " << s.model_name << ": " << s.total_programs << " ANE programs (" << s.ane_layers
    << "/" << s.n_layers << " layers x " << s.programs_per_layer << " x " << s.seq_buckets.size()
    << " S buckets + " << s.lm_head_chunks << " LM-head chunks), budget " << s.compile_budget
    << (s.fits_budget ? " (fits)" : " (does NOT fit: the rest runs on the CPU)") << "\n";
  o << "  per decode token: " << s.programs_per_decode_token << " programs; S buckets:";
  for (int b : s.seq_buckets) o << " " << b;
  o << "\n  weights: " << s.weight_format << ", " << (s.weight_bytes_exact ? "" : "~")
    << s.total_weight_bytes / (1024.0 * 1024.0) << " MiB\n";
  if (!s.out_dir.empty()) o << "  written to " << s.out_dir << " in " << s.build_ms << " ms\n";
  return o.str();
}

}  // namespace anelm::tools
