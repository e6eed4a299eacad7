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

AneVerifyReport verify_ane_model(const std::string& model_path, const AneBackendOptions& opts,
                                 bool ftz, std::optional<DType> requant) {
  const std::unique_ptr<LoadedModel> model = load_model(model_path, requant);
  return verify_ane_programs(model->config, model->weights, opts, ftz);
}

std::string ane_verify_json(const AneVerifyReport& r) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json progs = nlohmann::ordered_json::array();
  for (const AneProgramCheck& c : r.programs) {
    nlohmann::ordered_json p;
    p["name"] = c.name;
    p["kind"] = c.kind;
    p["rel_error"] = c.rel_error;
    if (c.device_rel_error >= 0) p["device_rel_error"] = c.device_rel_error;
    progs.push_back(std::move(p));
  }
  j["programs"] = std::move(progs);
  j["max_rel_error"] = r.max_rel_error;
  j["worst_program"] = r.worst_program;
  j["ftz"] = r.ftz;
  j["live_programs"] = r.live_programs;
  j["dispatches_per_token"] = r.dispatches_per_token;
  j["tokens"] = r.tokens;
  j["reference"] = r.reference;
  j["device"] = r.device;
  j["sim_ms"] = r.sim_ms;
  return j.dump();
}

std::string ane_verify_text(const AneVerifyReport& r) {
  std::ostringstream o;
  for (const AneProgramCheck& c : r.programs) {
    o << "  " << c.name << ": rel error " << c.rel_error;
    if (c.device_rel_error >= 0) o << ", device vs simulator " << c.device_rel_error;
    o << "\n";
  }
  o << r.programs.size() << " programs on " << r.tokens << " prompt tokens, simulator (FTZ "
    << (r.ftz ? "on" : "off") << ") vs " << r.reference << ": max rel error " << r.max_rel_error
    << " (" << r.worst_program << "); " << r.live_programs << " live programs, "
    << r.dispatches_per_token << " dispatches per decoded token\n";
  o << "device: " << r.device << "\n";
  return o.str();
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
  j["live_programs"] = s.live_programs;
  j["max_live_programs"] = s.max_live_programs;
  j["fits_budget"] = s.fits_budget;
  j["total_weight_bytes"] = s.total_weight_bytes;
  j["weight_bytes_exact"] = s.weight_bytes_exact;
  j["ane_attention_layers"] = s.ane_attention_layers;
  j["ane_deltanet_layers"] = s.ane_deltanet_layers;
  j["programs"] = s.program_names;
  if (!s.out_dir.empty()) j["build_ms"] = s.build_ms;
  return j.dump();
}

std::string ane_compile_summary_text(const AneCompileSummary& s) {
  std::ostringstream o;
  o << "model " << s.model_name << ": " << s.total_programs << " ANE programs (" << s.ane_layers
    << "/" << s.n_layers << " layers x " << s.programs_per_layer << " x " << s.seq_buckets.size()
    << " S buckets + " << s.lm_head_chunks << " LM-head chunks), budget " << s.compile_budget
    << ", " << s.live_programs << " live (cap " << s.max_live_programs << ")"
    << (s.fits_budget ? " (fits)" : " (does NOT fit: the rest runs on the CPU)") << "\n";
  if (s.ane_deltanet_layers > 0) {
    o << "  layer kinds on the ANE: " << s.ane_deltanet_layers << " Gated DeltaNet (dn_in + dn_ffn), "
      << s.ane_attention_layers << " attention (attn_in + ffn)\n";
  }
  o << "  per decode token: " << s.programs_per_decode_token << " programs; S buckets:";
  for (int b : s.seq_buckets) o << " " << b;
  o << "\n  weights: " << s.weight_format << ", " << (s.weight_bytes_exact ? "" : "~")
    << s.total_weight_bytes / (1024.0 * 1024.0) << " MiB\n";
  if (!s.out_dir.empty()) o << "  written to " << s.out_dir << " in " << s.build_ms << " ms\n";
  return o.str();
}

}  // namespace anelm::tools
