// Forward pass driver: embedding lookup, per-layer executor calls with cancel checks, LM head.
#include "engine/transformer.h"

#include <algorithm>

namespace anelm::engine {

Transformer::Transformer(const ModelConfig& cfg, const ModelWeights& weights, ThreadPool& pool,
                         const kernels::KernelTable& kernels, int64_t inline_macs)
    : cfg_(cfg), w_(weights), pool_(pool), k_(kernels), inline_macs_(inline_macs),
      cpu_(cfg, weights, pool, kernels, inline_macs),
      layers_(static_cast<size_t>(cfg.n_layers), &cpu_) {}

void Transformer::set_layer_executor(int layer, LayerExecutor* exec) {
  layers_[static_cast<size_t>(layer)] = exec ? exec : &cpu_;
}

// out [n][vocab] = lm_head . rmsnorm(x[t]) for the n rows of x.
void Transformer::logits(Activations& acts, const float* x, int n, float* out) {
  if (head_) {
    head_->logits(x, n, out);
    return;
  }
  const int d = cfg_.d_model;
  const auto* norm = static_cast<const float*>(w_.out_norm.data);
  for (int t = 0; t < n; ++t) k_.rmsnorm(x + t * d, norm, cfg_.rms_eps, d, acts.xb.data() + t * d);
  const LinearOut head[] = {{&w_.lm_head, out}};
  parallel_linear(pool_, k_, acts.xb.data(), n, d, head, acts.xq.data(), acts.xk.data(), inline_macs_);
}

int Transformer::forward(std::span<const int> tokens, int pos, KvCache& kv, Activations& acts,
                         float* all_logits, const std::atomic<bool>* cancel) {
  const int n_total = static_cast<int>(tokens.size());
  const int d = cfg_.d_model;
  auto cancelled = [&] { return cancel && cancel->load(std::memory_order_relaxed); };
  for (int done = 0; done < n_total;) {
    const int n = n_total - done < acts.max_batch ? n_total - done : acts.max_batch;
    for (int t = 0; t < n; ++t) {
      k_.dequantize_row(w_.tok_embd.data, w_.tok_embd.dtype, tokens[static_cast<size_t>(done + t)], d,
                        acts.x.data() + static_cast<int64_t>(t) * d);
    }
    for (int l = 0; l < cfg_.n_layers; ++l) {
      if (cancelled()) return done;
      const LayerBatch batch{l, n, pos + done, acts.x.data(), &kv, &acts};
      layers_[static_cast<size_t>(l)]->run_layer(batch);
    }
    if (all_logits) {
      logits(acts, acts.x.data(), n, all_logits + static_cast<int64_t>(done) * cfg_.vocab_size);
    }
    done += n;
    if (done == n_total) {
      const float* last = acts.x.data() + static_cast<int64_t>(n - 1) * d;
      if (all_logits) {
        const float* src = all_logits + static_cast<int64_t>(n_total - 1) * cfg_.vocab_size;
        std::copy(src, src + cfg_.vocab_size, acts.logits.begin());
      } else {
        logits(acts, last, 1, acts.logits.data());
      }
    } else if (cancelled()) {
      return done;
    }
  }
  return n_total;
}

}  // namespace anelm::engine
