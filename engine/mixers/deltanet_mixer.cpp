// Gated DeltaNet mixer over a continuous batch: the linears see every row at once; between them
// DeltaNetCore runs the conv and the recurrence per sequence, in token order, from the state the
// sequence's KvCache holds.
#include "engine/mixers/deltanet_mixer.h"

#include "engine/activations.h"
#include "engine/cpu_executor.h"

namespace anelm::engine {

DeltaNetMixer::DeltaNetMixer(const CpuContext& c) : c_(c), core_(c.cfg, c.k, c.pool, c.inline_macs) {}

void DeltaNetMixer::mix(const LayerBatch& b) {
  const DeltaNetWeights& W = c_.w.layers[static_cast<size_t>(b.layer)].deltanet;
  Activations& a = *b.acts;
  const LinearOut in[] = {{&W.qkv, a.dn_qkv.data()}, {&W.gate, a.dn_z.data()},
                          {&W.beta, a.dn_beta.data()}, {&W.alpha, a.dn_g.data()}};
  parallel_linear(c_.pool, c_.k, a.xb.data(), b.n, c_.cfg.d_model, in, a.xq.data(), a.xk.data(), c_.inline_macs);
  core_.run(W, b);
  const LinearOut out[] = {{&W.out, a.proj.data()}};
  parallel_linear(c_.pool, c_.k, a.dn_out.data(), b.n, c_.cfg.deltanet.value_dim(), out, a.xq.data(), a.xk.data(),
                  c_.inline_macs);
}

}  // namespace anelm::engine
