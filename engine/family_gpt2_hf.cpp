// GPT-2's HF checkpoints (GPT2LMHeadModel) served under the GGUF names llama.cpp's converter writes
// (conversion/gpt2.py): wte, wpe, h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_f,
// with or without the `transformer.` prefix. HF's Conv1D stores its weight [in, out] (x @ W), the
// transpose of nn.Linear's [out, in] the engine multiplies by: those four matrices per layer are
// repacked once at load into owned buffers, as the converter transposes them; nothing per token.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/families.h"

namespace anelm::engine {

namespace {

// GGUF name suffix -> HF name suffix within a layer; `conv1d`: stored [in, out].
struct LayerName {
  const char* gguf;
  const char* hf;
  bool conv1d;
};

constexpr LayerName kLayerNames[] = {
    {"attn_norm.weight", "ln_1.weight", false},        {"attn_norm.bias", "ln_1.bias", false},
    {"attn_qkv.weight", "attn.c_attn.weight", true},   {"attn_qkv.bias", "attn.c_attn.bias", false},
    {"attn_output.weight", "attn.c_proj.weight", true}, {"attn_output.bias", "attn.c_proj.bias", false},
    {"ffn_norm.weight", "ln_2.weight", false},         {"ffn_norm.bias", "ln_2.bias", false},
    {"ffn_up.weight", "mlp.c_fc.weight", true},        {"ffn_up.bias", "mlp.c_fc.bias", false},
    {"ffn_down.weight", "mlp.c_proj.weight", true},    {"ffn_down.bias", "mlp.c_proj.bias", false},
};

constexpr std::pair<const char*, const char*> kGlobalNames[] = {
    {"token_embd.weight", "wte.weight"},
    {"position_embd.weight", "wpe.weight"},
    {"output_norm.weight", "ln_f.weight"},
    {"output_norm.bias", "ln_f.bias"},
};

std::string shape_str(const TensorView& t) {
  std::string s = "[";
  for (int i = 0; i < t.ndim; ++i) s += (i ? ", " : "") + std::to_string(t.shape[static_cast<size_t>(i)]);
  return s + "]";
}

// [rows, cols] -> [cols, rows] of 2- or 4-byte elements, in 32 x 32 tiles (both sides stay in cache).
void transpose(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, int64_t elem) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) std::memcpy(dst + (c * rows + r) * elem, src + (r * cols + c) * elem, static_cast<size_t>(elem));
      }
    }
  }
}

}  // namespace

std::optional<Gpt2HfName> gpt2_hf_name(const std::string& gguf) {
  for (const auto& [g, h] : kGlobalNames) {
    if (gguf == g) return Gpt2HfName{h, false};
  }
  if (gguf == "output.weight") return Gpt2HfName{"lm_head.weight", false};  // outside `transformer.`
  if (gguf.rfind("blk.", 0) != 0) return std::nullopt;
  const size_t dot = gguf.find('.', 4);
  if (dot == std::string::npos) return std::nullopt;
  const std::string layer = gguf.substr(4, dot - 4), rest = gguf.substr(dot + 1);
  for (const LayerName& n : kLayerNames) {
    if (rest == n.gguf) return Gpt2HfName{"h." + layer + "." + n.hf, n.conv1d};
  }
  return std::nullopt;
}

TensorLookup gpt2_hf_tensors(const ModelConfig& c, TensorLookup file, std::vector<std::shared_ptr<void>>& owners) {
  // Checkpoints saved by transformers carry the module prefix; openai-community/gpt2's file does not.
  const std::string prefix = file("transformer.wte.weight") ? "transformer." : "";
  // The fused QKV is asked for once per part (gpt2_split_fused): repack it once.
  auto repacked = std::make_shared<std::map<std::string, TensorView>>();
  return [c, prefix, file = std::move(file), repacked, &owners](const std::string& name) -> std::optional<TensorView> {
    const std::optional<Gpt2HfName> hf = gpt2_hf_name(name);
    if (!hf) return file(name);
    const std::string full = hf->name == "lm_head.weight" ? hf->name : prefix + hf->name;
    if (auto it = repacked->find(full); it != repacked->end()) return it->second;
    std::optional<TensorView> t = file(full);
    if (!t) {
      if (name == "output.weight") return std::nullopt;  // tied: the head is wte
      throw Error(ErrorKind::kNotFound, "tensor '" + full + "' is missing (GPT-2's " + name + ")");
    }
    // The shape as HF stores it: Conv1D [in, out] (c_attn [d_model, q_dim + 2 kv_dim], attn.c_proj
    // [q_dim, d_model], mlp.c_fc [d_model, d_ff], mlp.c_proj [d_ff, d_model]); the rest as the GGUF.
    const int64_t d = c.d_model, q = c.q_dim(), ff = c.d_ff, qkv = q + 2 * c.kv_dim();
    std::vector<int64_t> want;
    const auto is = [&](const char* suffix) { return name.ends_with(suffix); };
    if (is("attn_qkv.weight")) want = {d, qkv};
    else if (is("attn_output.weight")) want = {q, d};
    else if (is("ffn_up.weight")) want = {d, ff};
    else if (is("ffn_down.weight")) want = {ff, d};
    else if (is("attn_qkv.bias")) want = {qkv};
    else if (is("ffn_up.bias")) want = {ff};
    else if (name == "token_embd.weight" || name == "output.weight") want = {c.vocab_size, d};
    else if (name == "position_embd.weight") want = {c.max_ctx, d};
    else want = {d};  // LayerNorm weights and biases, attn.c_proj / mlp.c_proj biases
    bool ok = t->ndim == static_cast<int>(want.size());
    for (size_t i = 0; ok && i < want.size(); ++i) ok = t->shape[i] == want[i];
    if (!ok) {
      std::string w = "[";
      for (size_t i = 0; i < want.size(); ++i) w += (i ? ", " : "") + std::to_string(want[i]);
      throw Error(ErrorKind::kFormat, "tensor '" + full + "' has shape " + shape_str(*t) + ", expected " +
                                          (hf->conv1d ? "the Conv1D [in, out] = " : "") + w + "]");
    }
    t->name = full;
    if (!hf->conv1d) return t;
    const int64_t in_dim = want[0], out_dim = want[1];
    if (dtype_is_quantized(t->dtype)) {
      throw Error(ErrorKind::kUnsupported, "tensor '" + full + "' is " + dtype_name(t->dtype) + "; a Conv1D weight must be f32, f16 or bf16");
    }
    const int64_t elem = dtype_row_bytes(t->dtype, 1);
    void* buf = std::aligned_alloc(64, static_cast<size_t>((t->nbytes + 63) / 64 * 64));
    if (!buf) throw Error(ErrorKind::kResourceExhausted, "out of memory repacking '" + full + "'");
    owners.emplace_back(buf, std::free);
    transpose(static_cast<const uint8_t*>(t->data), static_cast<uint8_t*>(buf), in_dim, out_dim, elem);
    TensorView v = *t;
    v.name = full + " (transposed)";
    v.shape = {out_dim, in_dim, 0, 0};
    v.data = buf;
    (*repacked)[full] = v;
    return v;
  };
}

}  // namespace anelm::engine
