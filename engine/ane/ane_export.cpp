// `anelm compile`'s engine side: the program plan (counts only) and the export of every program.
#include "engine/ane/ane_export.h"

#include <filesystem>

#include "ane_bridge/program_export.h"
#include "engine/ane/ane_calibrate.h"
#include "engine/ane/ane_programs.h"
#include "engine/error.h"
#include "engine/kernels/kernels.h"
#include "engine/thread_pool.h"

namespace anelm::engine {

using namespace ane_programs;

namespace {

// Bytes of one MILBlob file holding `payload` bytes: 64-byte header + 64-byte record + payload
// padded to 64 (weight_blob.h).
std::int64_t blob_file_bytes(std::int64_t payload) { return 128 + (payload + 63) / 64 * 64; }

// Weight files of a [rows][cols] matrix: fp16 payload, or int8 payload + fp16 scale file.
std::int64_t matrix_bytes(std::int64_t rows, std::int64_t cols, bool int8) {
  return int8 ? blob_file_bytes(rows * cols) + blob_file_bytes(2 * rows)
              : blob_file_bytes(2 * rows * cols);
}

// Per layer kind: program A's stacked in-projection (+ biases) and program B's output
// projection + FFN.
std::int64_t layer_weight_bytes(const ModelConfig& c, int layer, bool int8) {
  const std::int64_t d = c.d_model, f = c.d_ff, in = ane_in_width(c, layer);
  const bool bias = c.qkv_bias && c.mixer(layer) == Mixer::kAttention;
  const std::int64_t a = matrix_bytes(in, d, int8) + (bias ? blob_file_bytes(2 * in) : 0);
  const std::int64_t b = matrix_bytes(d, ane_mixer_width(c, layer), int8) +
                         (c.gated_ffn ? 2 : 1) * matrix_bytes(f, d, int8) + matrix_bytes(d, f, int8);
  // GPT-2: A's folded bias even without qkv_bias, B's three biases; Gemma 3: the post-norm gains.
  const std::int64_t v = c.layer_norm ? (bias ? 0 : blob_file_bytes(2 * in)) + 2 * blob_file_bytes(2 * d) +
                                            blob_file_bytes(2 * f)
                         : c.post_norms ? 2 * blob_file_bytes(2 * d)
                                        : 0;
  return a + b + v;
}

std::int64_t estimate_weight_bytes(const ModelConfig& c, const Placement& p, bool int8) {
  std::int64_t total = 0;
  for (int l = 0; l < p.ane_layers; ++l)
    total += layer_weight_bytes(c, l, int8) * static_cast<std::int64_t>(p.buckets.size());
  for (const auto& ch : p.chunks)  // GPT-2's chunks carry W . final-norm bias
    total += matrix_bytes(ch.rows, c.d_model, int8) + (c.layer_norm ? blob_file_bytes(2 * ch.rows) : 0);
  return total;
}

// The names of the programs a placement builds, in build order (the export writes the same).
std::vector<std::string> program_names(const ModelConfig& c, const Placement& p) {
  std::vector<std::string> names;
  for (int l = 0; l < p.ane_layers; ++l)
    for (std::int64_t sq : p.buckets)
      for (bool ffn : {false, true}) names.push_back(ane::block_name(ane_layer_kind(c, l, ffn), l, sq));
  for (std::size_t i = 0; i < p.chunks.size(); ++i)
    names.push_back(ane::block_name("lm_head", static_cast<int>(i), ane::kDecodeSeqLen));
  return names;
}

AneCompileSummary summarize(const ModelConfig& cfg, const AneBackendOptions& o,
                            const Placement& p) {
  AneCompileSummary s;
  s.model_name = cfg.name;
  s.weight_format = o.int8_weights ? "int8" : "fp16";
  for (std::int64_t b : p.buckets) s.seq_buckets.push_back(static_cast<int>(b));
  s.n_layers = cfg.n_layers;
  s.ane_layers = p.ane_layers;
  s.lm_head_chunks = static_cast<int>(p.chunks.size());
  s.programs_per_decode_token = p.dispatches_per_token;
  s.total_programs = p.total;
  s.compile_budget = o.compile_budget;
  s.live_programs = p.live;
  s.max_live_programs = o.max_live_programs;
  s.fits_budget = p.ane_layers == cfg.n_layers && (!o.lm_head_on_ane || !p.chunks.empty()) &&
                  p.total <= o.compile_budget &&
                  (o.max_live_programs == 0 || p.live <= o.max_live_programs);
  s.total_weight_bytes = estimate_weight_bytes(cfg, p, o.int8_weights);
  for (int l = 0; l < p.ane_layers; ++l)
    ++(cfg.mixer(l) == Mixer::kDeltaNet ? s.ane_deltanet_layers : s.ane_attention_layers);
  s.program_names = program_names(cfg, p);
  return s;
}

void write_block(const std::filesystem::path& dir, const ane::BlockProgram& b,
                 std::vector<ane::ManifestEntry>* entries, AneCompileSummary* s) {
  check(ane::write_program_dir(dir, b.source), "writing ", b.source.name);
  entries->push_back(ane::manifest_entry(b));
  s->program_names.push_back(b.source.name);
  s->total_weight_bytes += static_cast<std::int64_t>(b.weight_bytes);
}

}  // namespace

AneCompileSummary plan_ane_programs(const ModelConfig& cfg, const AneBackendOptions& opts) {
  return summarize(cfg, opts, place_programs(cfg, opts, opts.compile_budget));
}

AneCompileSummary export_ane_programs(const ModelConfig& cfg, const ModelWeights& weights,
                                      const std::string& out_dir, const AneBackendOptions& opts) {
  const auto t0 = Clock::now();
  const Placement p = place_programs(cfg, opts, opts.compile_budget);
  AneCompileSummary s = summarize(cfg, opts, p);
  s.out_dir = out_dir;
  s.total_weight_bytes = 0;
  s.weight_bytes_exact = true;
  s.program_names.clear();  // write_block lists what it wrote
  const std::filesystem::path dir(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot create " + out_dir + ": " + ec.message());
  // Streamed: one program in memory at a time (ane_bridge's write_programs wants them all at
  // once, ~1 GB for Qwen2.5-0.5B); same directory layout and manifest.
  std::vector<ane::ManifestEntry> entries;
  AnePrescales ps;
  if (opts.rms_prescale > 0) {
    ps = fixed_ane_prescales(cfg, opts.rms_prescale);
  } else {  // the same calibration as the backend, so the programs are identical
    ThreadPool pool(1);
    ps = calibrate_ane_prescales(cfg, weights, pool, kernels::active_kernels());
  }
  for (int l = 0; l < p.ane_layers; ++l) {
    const LayerF32 lw(cfg, l, weights.layers[static_cast<std::size_t>(l)]);
    for (std::int64_t sq : p.buckets)
      for (bool ffn : {false, true})
        write_block(dir,
                    build_layer_block(cfg, lw, l, ffn, sq, opts.int8_weights, ps,
                                      opts.fp32_residual),
                    &entries, &s);
  }
  const std::vector<float> norm = to_f32(weights.out_norm);
  for (std::size_t i = 0; i < p.chunks.size(); ++i)
    write_block(dir,
                build_head_block(cfg, weights, norm, p.chunks[i], static_cast<int>(i),
                                 opts.int8_weights, ps.head),
                &entries, &s);
  check(ane::write_manifest(dir, entries, cfg.name), "writing manifest.json");
  s.build_ms = ms_since(t0);
  return s;
}

}  // namespace anelm::engine
