// Forward pass driver: embedding lookup, per-layer executor calls with cancel checks, LM head.
#include "engine/transformer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/error.h"

namespace anelm::engine {

Transformer::Transformer(const ModelConfig& cfg, const ModelWeights& weights, ThreadPool& pool,
                         const kernels::KernelTable& kernels, int64_t inline_macs)
    : cfg_(cfg), w_(weights), pool_(pool), k_(kernels), inline_macs_(inline_macs),
      cpu_(cfg, weights, pool, kernels, inline_macs),
      layers_(static_cast<size_t>(cfg.n_layers), &cpu_) {}

void Transformer::set_layer_executor(int layer, LayerExecutor* exec) {
  layers_[static_cast<size_t>(layer)] = exec ? exec : &cpu_;
}

void Transformer::logits(Activations& acts, const float* x, int n, float* out) {
  const int d = cfg_.d_model;
  if (head_) {
    head_->logits(x, n, out);
    return;
  }
  output_norm(x, n, acts.xb.data());
  const LinearOut head[] = {{&w_.lm_head, out}};
  parallel_linear(pool_, k_, acts.xb.data(), n, d, head, acts.xq.data(), acts.xk.data(), inline_macs_);
}

void Transformer::classify(Activations& acts, const float* x, float* out) {
  const int d = cfg_.d_model, nc = cfg_.n_cls_out;
  output_norm(x, 1, acts.xb.data());
  const LinearOut head[] = {{&w_.cls_out, out}};
  parallel_linear(pool_, k_, acts.xb.data(), 1, d, head, acts.xq.data(), acts.xk.data(), inline_macs_);
  if (const auto* b = static_cast<const float*>(w_.cls_out_b.data)) {
    for (int i = 0; i < nc; ++i) out[i] += b[i];
  }
  const float mx = *std::max_element(out, out + nc);
  double sum = 0;
  for (int i = 0; i < nc; ++i) sum += std::exp(static_cast<double>(out[i] - mx));
  for (int i = 0; i < nc; ++i) out[i] = static_cast<float>(std::exp(static_cast<double>(out[i] - mx)) / sum);
}

void Transformer::output_norm(const float* x, int n, float* out) const {
  const int d = cfg_.d_model;
  const auto* norm = static_cast<const float*>(w_.out_norm.data);
  const auto* bias = static_cast<const float*>(w_.out_norm_b.data);  // GPT-2's final LayerNorm
  if (!norm) {  // post-LN layers (BERT) end normed
    std::copy_n(x, static_cast<int64_t>(n) * d, out);
    return;
  }
  for (int i = 0; i < n; ++i) {
    if (cfg_.layer_norm) {
      k_.layer_norm(x + static_cast<int64_t>(i) * d, norm, bias, cfg_.rms_eps, d, out + static_cast<int64_t>(i) * d);
    } else {
      k_.rmsnorm(x + static_cast<int64_t>(i) * d, norm, cfg_.rms_eps, d, out + static_cast<int64_t>(i) * d);
    }
  }
}

// GPT-2: each row's learned position embedding added to its token embedding (xb is free before the
// first layer). The table has max_ctx rows; a position past it has no embedding, so the pass is refused
// (the engine clamps its context to max_ctx, so only a direct caller can get here).
void Transformer::add_positions(const BatchStep& b, Activations& acts) {
  const int d = cfg_.d_model;
  const int64_t n_pos = w_.pos_embd.rows();
  for (const SeqRows& s : b.seqs) {
    if (s.pos < 0 || s.pos + s.n > n_pos) {
      throw Error(ErrorKind::kInvalidArgument, "positions [" + std::to_string(s.pos) + ", " + std::to_string(s.pos + s.n) +
                                                   ") exceed the model's " + std::to_string(n_pos) +
                                                   " learned positions (" + arch_name(cfg_.arch) + " context_length)");
    }
    for (int i = 0; i < s.n; ++i) {
      const int64_t t = s.row + i;
      float* pe = acts.xb.data() + t * d;
      k_.dequantize_row(w_.pos_embd.data, w_.pos_embd.dtype, s.pos + i, d, pe);
      k_.add(acts.x.data() + t * d, pe, d, acts.x.data() + t * d);
    }
  }
}

// BERT: x[t] = LayerNorm(x[t] + token_types[0]) (every token is "sentence A", as in llama.cpp).
void Transformer::embed_norm(int n, Activations& acts) {
  const int d = cfg_.d_model;
  const auto* type0 = static_cast<const float*>(w_.type_embd.data);
  const auto* w = static_cast<const float*>(w_.embd_norm.data);
  const auto* b = static_cast<const float*>(w_.embd_norm_b.data);
  for (int64_t t = 0; t < n; ++t) {
    float* x = acts.x.data() + t * d;
    if (type0) k_.add(x, type0, d, x);
    k_.layer_norm(x, w, b, cfg_.rms_eps, d, x);
  }
}

bool Transformer::step(const BatchStep& b, Activations& acts, const std::function<bool()>& abort) {
  const int n = static_cast<int>(b.tokens.size());
  const int d = cfg_.d_model;
  for (int t = 0; t < n; ++t) {
    k_.dequantize_row(w_.tok_embd.data, w_.tok_embd.dtype, b.tokens[static_cast<size_t>(t)], d,
                      acts.x.data() + static_cast<int64_t>(t) * d);
  }
  if (cfg_.learned_positions) add_positions(b, acts);
  if (cfg_.embd_norm) embed_norm(n, acts);
  // A recurrent state holds exactly the tokens it absorbed: a pass must continue it (or start a
  // sequence over at position 0), and it is invalid while the pass writes it (an abandoned pass
  // leaves it so).
  if (cfg_.recurrent()) {
    for (const SeqRows& s : b.seqs) {
      if (s.pos != 0 && s.kv->recurrent_pos() != s.pos) {
        throw Error(ErrorKind::kInternal, "recurrent state holds " + std::to_string(s.kv->recurrent_pos()) +
                                              " tokens, cannot continue at position " + std::to_string(s.pos));
      }
      s.kv->set_recurrent_pos(-1);
    }
  }
  // A pass that returns logits (not hidden states) needs only their rows out of the last layer.
  const bool select = b.logits != nullptr;
  for (int l = 0; l < cfg_.n_layers; ++l) {
    if (abort && abort()) return false;
    const bool last = l == cfg_.n_layers - 1;
    layers_[static_cast<size_t>(l)]->run_layer(
        LayerBatch{l, n, acts.x.data(), &acts, b.seqs, select && last, last ? b.logit_rows : std::span<const int>{}});
  }
  for (const SeqRows& s : b.seqs) s.kv->set_recurrent_pos(s.pos + s.n);
  if (!b.logit_rows.empty()) logits(acts, acts.x.data(), static_cast<int>(b.logit_rows.size()), b.logits);
  return true;
}

int Transformer::forward(std::span<const int> tokens, int pos, KvCache& kv, Activations& acts,
                         float* all_logits, const std::atomic<bool>* cancel) {
  const int n_total = static_cast<int>(tokens.size());
  const std::function<bool()> abort = [cancel] { return cancel && cancel->load(std::memory_order_relaxed); };
  for (int done = 0; done < n_total;) {
    const int n = std::min(n_total - done, acts.max_batch);
    const SeqRows seq{0, n, pos + done, &kv};
    const int last = n - 1;
    const bool final_chunk = done + n == n_total;
    // Without all_logits nothing reads the chunk's hidden states: an earlier chunk selects no rows.
    BatchStep b{tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(n)), {&seq, 1}, {},
                all_logits ? nullptr : acts.logits.data()};
    if (final_chunk && !all_logits) b.logit_rows = {&last, 1};
    if (!step(b, acts, abort)) return done;
    if (all_logits) logits(acts, acts.x.data(), n, all_logits + static_cast<int64_t>(done) * cfg_.vocab_size);
    done += n;
    if (final_chunk && all_logits) {
      const float* src = all_logits + static_cast<int64_t>(n_total - 1) * cfg_.vocab_size;
      std::copy(src, src + cfg_.vocab_size, acts.logits.begin());
    } else if (!final_chunk && abort()) {
      return done;
    }
  }
  return n_total;
}

}  // namespace anelm::engine
