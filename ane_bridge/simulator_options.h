// Knobs of the CPU simulator: the emulation switches of §7.3 and the compiler limits of §7.1.
#pragma once

#include <cstdint>
#include <vector>

namespace anelm::ane {

// How several inputs/outputs bind to surfaces (§4.5). [contested] OR: alphabetical by variable
// name; MX-PR#22: declaration order. Emitters should pick names for which both agree.
enum class BindingOrder { kSorted, kDeclaration };

// Accumulator width inside conv/matmul/reduce_sum. AG says "fp32 class"; fp16 is a pessimistic
// check.
enum class Accumulate { kFp32, kFp16 };

// Every field defaults to the safest reading of the spec; [contested]/[open] marks the ones the
// sources disagree on (ane-programming-model.md §10), so they can be flipped when a Mac settles
// them.
struct SimulatorOptions {
  // [open §10.1] Row stride of surface rows in bytes: 64 (IM, m0at, OR #4); 0 = packed (OR #14).
  std::int64_t row_align_bytes = 64;
  // [open §10.2] Minimum surface allocation: 0 (M5 evidence), 16384 (IM) or 49152 (OR, m0at). The
  // spec's table defaults to 0; we take the strictest, 49152, since our packers allocate that
  // anyway.
  std::int64_t min_surface_bytes = 49152;
  // [contested §10.3] All inputs of a request must share one allocation size, all outputs another.
  bool multi_io_equal_alloc_required = true;
  // [contested §10.3] Surface binding order for several inputs or outputs.
  BindingOrder binding_order = BindingOrder::kSorted;
  // [open §10.4] Strict blob checks (sentinel, version, count, size == numel*elem, payload offset =
  // record + 64, 64-byte alignment, dtype code). false mimics the tolerance seen on some chips.
  bool blob_strict = true;
  // [open §10.16] Blob dtype codes accepted for int8 payloads in strict mode: OM ships 1 (our
  // writer's default, WeightBlobWriter), CT's enum says 4 (the writer's switch). Both are accepted
  // until a Mac shows which the compiler reads.
  std::vector<std::uint32_t> int8_blob_dtype_codes = {1, 4};
  // [contested §10.5] Successful compiles allowed per process (one Simulator = one process). Never
  // refunded by release(). 119 per MX; MX itself plans for 100.
  int compile_budget = 119;
  // [open §10.5] Limit on simultaneously loaded programs: IM reports ~55 live models, SW ~126
  // slots. The spec's table leaves it off; on, at 60, is the harsher reading (issue 15): a load
  // past it fails (kCompileFailed, before any compile is spent), release() frees a slot. 0 = off.
  int max_live_programs = 60;
  // [open §10.6] Flush fp16 subnormals (|x| < 2^-14) to zero wherever the chip stores fp16: every
  // op result, fp16 inputs read from surfaces, consts and dequantized weights. The spec's table
  // defaults to off; on is the harsher reading (issue 15): kernels must not rely on subnormals
  // such as fp16(1e-5).
  bool fp16_ftz = true;
  // [open §10.6] Accumulator width.
  Accumulate accumulate = Accumulate::kFp32;
  // [contested §10.8] fp32 function I/O (+ cast) fails on M1/M2 and "produces zeros" on M4 Max per
  // MX-PR#40, works on M5. Safest: reject; fp16 I/O everywhere.
  bool allow_fp32_io = false;
  // IM accepts bool function I/O; nothing of ours needs it.
  bool allow_bool_io = false;

  // Compiler limits (§5.1, §7.1 item 5). [open §10.9] Output channels: 65536 (AG) vs 16384 (IM);
  // MX runs 32000. We take 16384 for conv outputs and activations' channel axis.
  std::int64_t max_channels = 16384;
  std::int64_t max_spatial = 16384;           // H and W of any activation (AG, IM)
  std::int64_t max_conv_in_channels = 16384;  // "32000 input channels rejected" (MX, DE)
  std::int64_t max_matmul_inner = 16384;      // IM
  std::int64_t max_kernel_width = 13;         // AG
  // [contested §5.1] IM: ~8 MB of fp16 weights per program; AI runs ~75 MB. 0 = unchecked.
  std::int64_t max_program_weight_bytes = 0;
};

}  // namespace anelm::ane
