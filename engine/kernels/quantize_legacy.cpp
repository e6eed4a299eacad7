// Quantizers for the 32-element block types beyond Q8_0/Q4_0: Q4_1, Q5_0, Q5_1 and IQ4_NL. Each
// block's scale (and minimum) comes from the least-squares search of quantize_fit.h; the codes are
// then taken against the f16-rounded values actually stored, so rounding d costs no extra error.
#include <cstring>

#include "engine/kernels/fp16.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/quantize_fit.h"

namespace anelm::engine::kernels {

namespace {

// The fifth bits of 32 codes 0..31: bit j of the little-endian u32 is bit 4 of code j.
void pack_high_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < 32; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(bits >> (8 * b));
}

// Q4_1 / Q5_1: fit, store d and m in f16, take the codes against the stored values.
template <typename Block>
void quantize_affine_block(const float* x, Block& out, int nmax, uint8_t* q) {
  const fit::Affine a = fit::fit_affine(x, kQBlock, nmax, /*offset_nonpositive=*/false);
  out.d = float_to_half(a.scale);
  out.m = float_to_half(a.offset);
  fit::codes_affine(x, kQBlock, {half_to_float(out.d), half_to_float(out.m)}, nmax, q);
}

}  // namespace

void quantize_row_q4_1(const float* x, BlockQ4_1* out, int64_t k) {
  uint8_t q[kQBlock];
  for (int64_t b = 0; b < k / kQBlock; ++b, x += kQBlock) {
    quantize_affine_block(x, out[b], 15, q);
    fit::pack_nibbles32(q, out[b].qs);
  }
}

void quantize_row_q5_1(const float* x, BlockQ5_1* out, int64_t k) {
  uint8_t q[kQBlock];
  for (int64_t b = 0; b < k / kQBlock; ++b, x += kQBlock) {
    quantize_affine_block(x, out[b], 31, q);
    fit::pack_nibbles32(q, out[b].qs);
    pack_high_bits(q, out[b].qh);
  }
}

void quantize_row_q5_0(const float* x, BlockQ5_0* out, int64_t k) {
  int8_t c[kQBlock];
  uint8_t q[kQBlock];
  for (int64_t b = 0; b < k / kQBlock; ++b, x += kQBlock) {
    out[b].d = float_to_half(fit::fit_symmetric(x, kQBlock, -16, 15));
    fit::codes_symmetric(x, kQBlock, half_to_float(out[b].d), -16, 15, c);
    for (int j = 0; j < kQBlock; ++j) q[j] = static_cast<uint8_t>(c[j] + 16);  // stored with offset 16
    fit::pack_nibbles32(q, out[b].qs);
    pack_high_bits(q, out[b].qh);
  }
}

void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* out, int64_t k) {
  int8_t c[kQBlock];
  uint8_t q[kQBlock];
  for (int64_t b = 0; b < k / kQBlock; ++b, x += kQBlock) {
    out[b].d = float_to_half(fit::fit_iq4(x, kQBlock));
    fit::codes_iq4(x, kQBlock, half_to_float(out[b].d), c);
    std::memcpy(q, c, sizeof q);  // table indices 0..15
    fit::pack_nibbles32(q, out[b].qs);
  }
}

}  // namespace anelm::engine::kernels
