// Per-kernel bench (llm.c dev/cuda pattern): every ISA's matmul is first validated against the scalar
// reference on the same data, then timed; one JSON line per (isa, dtype, shape, n) with GB/s of
// weights streamed and GFLOP/s. Usage: bench_kernels [reps=20] [dtype, e.g. q4_K: only that one]
// [shape: qkv|gate_up|down|lm_head|q3_qkv|q3_o|q3_gate_up|q3_down|q3_lm_head|phi_qkv|phi_o|phi_gate_up|phi_down]
// [exact: also rms_err_vs_exact, against the float activations]. ANELM_BENCH_ISA=avx2 (say) times that
// table only (amx_bf16: the opt-in AMX-BF16 table; the scalar reference still validates); ANELM_BENCH_N=1,4,128 only those token counts. Shapes are Qwen2.5-0.5B's, Qwen3-0.6B's
// (q3_*) and Phi-4-mini's (phi_*); the K-quants run on the rows that hold whole 256-element blocks.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/fp16.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/reference.h"

using namespace anelm::engine;
using namespace anelm::engine::kernels;

namespace {

std::vector<uint8_t> encode(const std::vector<float>& m, DType t, int64_t rows, int64_t cols) {
  std::vector<uint8_t> out(static_cast<size_t>(dtype_row_bytes(t, cols) * rows));
  for (int64_t r = 0; r < rows; ++r) row_from_f32(m.data() + r * cols, t, out.data() + r * dtype_row_bytes(t, cols), cols);
  return out;
}

// The super-block types: random bytes with sane f16 scales (every pattern of their packed sub-block
// scales and high bits, which a quantiser would not all produce).
std::vector<uint8_t> random_blocks(DType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::vector<uint8_t> out(static_cast<size_t>(dtype_row_bytes(t, cols) * rows));
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  std::vector<int> f16_at;  // byte offsets of the f16 fields of one block
  switch (t) {
    case DType::kQ4_K: case DType::kQ5_K: f16_at = {0, 2}; break;
    case DType::kQ2_K: f16_at = {80, 82}; break;
    case DType::kQ3_K: f16_at = {108}; break;
    case DType::kQ6_K: f16_at = {208}; break;
    default: f16_at = {0}; break;
  }
  std::uniform_real_distribution<float> scale(0.001f, 0.01f);
  const size_t bb = static_cast<size_t>(dtype_block_bytes(t));
  for (size_t b = 0; b < out.size() / bb; ++b) {
    for (int off : f16_at) {
      const uint16_t v = float_to_half(scale(rng));
      std::memcpy(out.data() + b * bb + off, &v, 2);
    }
  }
  return out;
}

const char* dt_name(DType t) { return dtype_name(t); }

// bf16 with round to nearest even (as VCVTNE2PS2BF16).
float round_bf16(float v) { return bf16_to_float(float_to_bf16(v)); }

// What a table's bf16 path computes (KernelTable::bf16_min_tokens): the products of bf16-rounded
// weights and activations, summed here in double.
std::vector<float> bf16_reference(const std::vector<uint8_t>& w, DType t, int64_t rows, int64_t cols,
                                  const std::vector<float>& x, int n) {
  std::vector<float> wr(static_cast<size_t>(cols)), xr(x.size()), y(static_cast<size_t>(n * rows));
  for (size_t i = 0; i < x.size(); ++i) xr[i] = round_bf16(x[i]);
  for (int64_t r = 0; r < rows; ++r) {
    ref::dequantize_row(w.data(), t, r, cols, wr.data());
    for (float& v : wr) v = round_bf16(v);
    for (int i = 0; i < n; ++i) {
      double acc = 0;
      for (int64_t c = 0; c < cols; ++c) acc += static_cast<double>(wr[c]) * xr[i * cols + c];
      y[i * rows + r] = static_cast<float>(acc);
    }
  }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  if (reps < 1) {  // --help, or a count that is not one
    std::fprintf(stderr, "usage: bench_kernels [reps >= 1, default 20] [dtype] [shape] [exact] (see the top of bench/bench_kernels.cpp)\n");
    return 2;
  }
  const std::string only = argc > 2 ? argv[2] : "";
  const std::string only_shape = argc > 3 ? argv[3] : "";
  const bool exact_errors = argc > 4 && std::string(argv[4]) == "exact";
  // Every table this CPU runs, and the opt-in AMX-BF16 one (amx_bf16_table) as "amx_bf16".
  std::vector<std::pair<std::string, const KernelTable*>> tables;
  for (Isa isa : supported_isas()) tables.emplace_back(isa_name(isa), kernel_table(isa));
  if (const KernelTable* b = amx_bf16_table()) tables.emplace_back("amx_bf16", b);
  std::vector<int> only_n;  // ANELM_BENCH_N=1,4,128: only these token counts
  if (const char* ns = std::getenv("ANELM_BENCH_N")) {
    for (const char* p = ns; *p;) {
      char* end = nullptr;
      only_n.push_back(static_cast<int>(std::strtol(p, &end, 10)));
      p = *end == ',' ? end + 1 : end;
      if (end == p && *p) break;
    }
  }
  struct Shape { const char* name; int64_t rows, cols; };
  // Qwen2.5-0.5B's, then Qwen3-0.6B's (d 1024: every row whole 256-blocks, so the K-quant files
  // users download run all their matrices through the K-quant kernels), then Phi-4-mini's (a 3.8B
  // model's wide rows: a prefill tile's activations no longer fit in L1).
  const Shape shapes[] = {{"qkv", 1152, 896},         {"gate_up", 9728, 896},      {"down", 896, 4864},
                          {"lm_head", 151936, 896},   {"q3_qkv", 4096, 1024},      {"q3_o", 1024, 2048},
                          {"q3_gate_up", 6144, 1024}, {"q3_down", 1024, 3072},     {"q3_lm_head", 151936, 1024},
                          {"phi_qkv", 5120, 3072},    {"phi_o", 3072, 3072},       {"phi_gate_up", 16384, 3072},
                          {"phi_down", 3072, 8192}};
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  int failures = 0;
  for (const Shape& s : shapes) {
    if (!only_shape.empty() && only_shape != s.name) continue;
    std::vector<float> wf(static_cast<size_t>(s.rows * s.cols));
    for (float& v : wf) v = nd(rng) * 0.05f;
    for (DType t : {DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ5_0, DType::kQ4_K, DType::kQ6_K,
                    DType::kQ5_K, DType::kQ4_1, DType::kQ5_1, DType::kIQ4_NL, DType::kIQ4_XS, DType::kQ3_K,
                    DType::kQ2_K}) {
      if (s.cols % dtype_block_elems(t) != 0) continue;
      if (!only.empty() && only != dtype_name(t)) continue;  // K-quants: only rows of whole 256-blocks
      const auto w = dtype_block_elems(t) == kQKBlock ? random_blocks(t, s.rows, s.cols, rng) : encode(wf, t, s.rows, s.cols);
      for (int n : {1, 2, 4, 8, 16, 64, 128, 256, 512}) {  // 2-8: a batched decode step of that many sequences
        if (!only_n.empty() && std::find(only_n.begin(), only_n.end(), n) == only_n.end()) continue;
        if (s.rows > 20000 && n > 8) continue;  // the LM head runs for each sequence's last token only
        std::vector<float> x(static_cast<size_t>(n * s.cols));
        for (float& v : x) v = nd(rng);
        std::vector<QBlock8> xq8(x.size() / kQBlock);
        std::vector<QBlockK> xqk(x.size() / kQKBlock);
        ref::quantize_q8(x.data(), n * s.cols, xq8.data());
        if (uses_q8k_activations(t)) ref::quantize_q8k(x.data(), n * s.cols, xqk.data());
        const void* xq = uses_q8k_activations(t) ? static_cast<const void*>(xqk.data()) : xq8.data();
        std::vector<float> xin(x.size());  // what the kernel effectively multiplies
        if (uses_q8_activations(t)) ref::dequantize_q8(xq8.data(), n * s.cols, xin.data());
        else if (uses_q8k_activations(t)) ref::dequantize_q8k(xqk.data(), n * s.cols, xin.data());
        else xin = x;
        std::vector<float> expect(static_cast<size_t>(n * s.rows)), got(expect.size());
        ref::matmul(w.data(), t, s.rows, s.cols, xin.data(), n, expect.data());
        std::vector<float> expect_bf16, exact;
        // How far each path lands from the exact product of these weights and the float
        // activations (the int8 activations and the bf16 roundings both add error): rms error over
        // the rms of the exact outputs.
        auto rms_err = [&](const std::vector<float>& got) {
          if (exact.empty()) {
            exact.resize(got.size());
            ref::matmul(w.data(), t, s.rows, s.cols, x.data(), n, exact.data());
          }
          double err = 0, mag = 0;
          for (size_t i = 0; i < got.size(); ++i) {
            err += (static_cast<double>(got[i]) - exact[i]) * (static_cast<double>(got[i]) - exact[i]);
            mag += static_cast<double>(exact[i]) * exact[i];
          }
          return std::sqrt(err / mag);
        };
        for (const auto& [name, k] : tables) {
          if (const char* only_isa = std::getenv("ANELM_BENCH_ISA"); only_isa && *only_isa && only_isa != name) continue;
          const MatmulFn mm = k->matmul[dtype_index(t)];
          mm(w.data(), s.cols, x.data(), xq, n, got.data(), s.rows, 0, s.rows);
          const int bf16_from = k->bf16_min_tokens[dtype_index(t)];
          const bool bf16 = bf16_from > 0 && n >= bf16_from;
          if (bf16 && expect_bf16.empty()) expect_bf16 = bf16_reference(w, t, s.rows, s.cols, x, n);
          const std::vector<float>& e = bf16 ? expect_bf16 : expect;
          float max_err = 0.0f;
          for (size_t i = 0; i < got.size(); ++i) max_err = std::max(max_err, std::fabs(got[i] - e[i]) / (1.0f + std::fabs(e[i])));
          const bool ok = max_err < 1e-3f;
          failures += !ok;
          const int r = k->isa == Isa::kScalar ? 1 : reps;
          const auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < r; ++i) mm(w.data(), s.cols, x.data(), xq, n, got.data(), s.rows, 0, s.rows);
          const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / r;
          const double exact_err = exact_errors ? rms_err(got) : 0.0;
          std::printf("{\"isa\":\"%s\",\"dtype\":\"%s\",\"shape\":\"%s\",\"rows\":%lld,\"cols\":%lld,\"n\":%d,"
                      "\"valid\":%s,\"max_rel_err\":%.3g,\"rms_err_vs_exact\":%.3g,\"ms\":%.4f,\"weight_gb_s\":%.2f,\"gflop_s\":%.2f}\n",
                      name.c_str(), dt_name(t), s.name, static_cast<long long>(s.rows), static_cast<long long>(s.cols), n,
                      ok ? "true" : "false", max_err, exact_err, sec * 1e3, static_cast<double>(w.size()) / sec / 1e9,
                      2.0 * s.rows * s.cols * n / sec / 1e9);
          std::fflush(stdout);
        }
      }
    }
  }
  return failures ? 1 : 0;
}
