// The coarse seam between the forward pass and a device: one virtual call runs one whole decoder
// layer for a batch of tokens (CPU kernels today, ANE programs later). No virtual calls below this.
#pragma once

namespace anelm::engine {

class KvCache;
struct Activations;

// One decoder layer's work: tokens at positions [pos, pos + n).
struct LayerBatch {
  int layer = 0;
  int n = 0;                      // tokens in the batch (<= acts->max_batch)
  int pos = 0;                    // position of the first token
  float* x = nullptr;             // [n][d_model] residual stream, updated in place
  KvCache* kv = nullptr;          // K/V written at [pos, pos + n), read at [0, pos + i]
  Activations* acts = nullptr;    // scratch (x above may point into acts->x)
};

// Runs x += attention(rmsnorm(x)); x += swiglu_ffn(rmsnorm(x)) for one layer, causal over the cache.
// Implementations hold their own weights/programs; an executor that cannot run a layer leaves it to
// the CPU executor (the transformer keeps one per layer). Called from the engine's driver thread only.
class LayerExecutor {
 public:
  virtual ~LayerExecutor() = default;
  virtual const char* name() const = 0;
  virtual void run_layer(const LayerBatch& batch) = 0;
};

}  // namespace anelm::engine
