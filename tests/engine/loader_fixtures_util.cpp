// Raw GGUF byte builders and tiny model writers shared by the loader test suites.
#include "tests/engine/loader_fixtures.h"

#include <cmath>

#include "engine/gguf_writer.h"
#include "engine/kernels/quantize.h"

namespace anelm::testing::loader {

namespace {
template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
void put_str(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}
}  // namespace

std::string kv_u32(uint32_t v) {
  std::string s;
  put<uint32_t>(s, 4);
  put<uint32_t>(s, v);
  return s;
}

std::string kv_f32(float v) {
  std::string s;
  put<uint32_t>(s, 6);
  put<float>(s, v);
  return s;
}

std::string kv_str(const std::string& v) {
  std::string s;
  put<uint32_t>(s, 8);
  put_str(s, v);
  return s;
}

std::string kv_str_array(const std::vector<std::string>& v) {
  std::string elems;
  for (const auto& x : v) put_str(elems, x);
  return kv_array_raw(8, v.size(), elems);
}

std::string kv_array_raw(uint32_t elem_type, uint64_t count, const std::string& elems) {
  std::string s;
  put<uint32_t>(s, 9);
  put<uint32_t>(s, elem_type);
  put<uint64_t>(s, count);
  return s + elems;
}

std::string RawGguf::bytes() const {
  std::string b = magic.substr(0, 4);
  put<uint32_t>(b, version);
  put<uint64_t>(b, n_tensors.value_or(tensors.size()));
  put<uint64_t>(b, n_kv.value_or(kv.size()));
  for (const auto& [k, v] : kv) {
    put_str(b, k);
    b += v;
  }
  for (const RawTensor& t : tensors) {
    put_str(b, t.name);
    put<uint32_t>(b, static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) put<int64_t>(b, n);
    put<uint32_t>(b, t.type);
    put<uint64_t>(b, t.offset);
  }
  while (b.size() % alignment) b.push_back('\0');
  b.append(data_bytes, '\0');
  return b;
}


std::filesystem::path write_tiny_gguf(const std::filesystem::path& dir, const TinySpec& spec) {
  using namespace anelm::engine;
  const int L = 2, d = 64, h = 4, kvh = 2, hd = 16, ff = 128, V = 96;
  const std::string arch = spec.qwen2 ? "qwen2" : "llama";
  GgufWriter w;
  w.add_string("general.architecture", arch);
  w.add_string("general.name", "tiny-test");
  w.add_u32(arch + ".block_count", L);
  w.add_u32(arch + ".embedding_length", d);
  w.add_u32(arch + ".feed_forward_length", ff);
  w.add_u32(arch + ".attention.head_count", h);
  w.add_u32(arch + ".attention.head_count_kv", kvh);
  w.add_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_f32(arch + ".rope.freq_base", 10000.0f);
  w.add_u32(arch + ".context_length", 256);
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  struct T {
    std::string name;
    std::vector<int64_t> shape;
    DType type;
  };
  std::vector<T> ts = {{"token_embd.weight", {V, d}, DType::kF32},
                       {"output_norm.weight", {d}, DType::kF32},
                       {"output.weight", {V, d}, DType::kF32}};
  const DType norm_t = spec.f16_norms ? DType::kF16 : DType::kF32;
  for (int l = 0; l < L; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    ts.push_back({p + "attn_norm.weight", {d}, norm_t});
    ts.push_back({p + "attn_q.weight", {h * hd, d}, DType::kF32});
    ts.push_back({p + "attn_k.weight", {kvh * hd, d}, DType::kF32});
    ts.push_back({p + "attn_v.weight", {kvh * hd, d}, DType::kF32});
    if (spec.qwen2) {
      ts.push_back({p + "attn_q.bias", {h * hd}, DType::kF32});
      ts.push_back({p + "attn_k.bias", {kvh * hd}, DType::kF32});
      ts.push_back({p + "attn_v.bias", {kvh * hd}, DType::kF32});
    }
    ts.push_back({p + "attn_output.weight", {d, h * hd}, DType::kF32});
    ts.push_back({p + "ffn_norm.weight", {d}, norm_t});
    ts.push_back({p + "ffn_gate.weight", {ff, d}, DType::kF32});
    ts.push_back({p + "ffn_up.weight", {ff, d}, DType::kF32});
    ts.push_back({p + "ffn_down.weight", {d, ff}, DType::kF32});
  }
  std::vector<T> kept;
  for (T& t : ts) {
    if (t.name == spec.omit) continue;
    if (t.name == spec.reshape) t.shape = {3, 5};
    if (t.name == spec.q8_norm) t.shape = {t.shape[0]}, t.type = DType::kQ8_0;
    kept.push_back(t);
    w.add_tensor(t.name, t.type, t.shape);
  }
  auto path = dir / "tiny.gguf";
  w.begin(path.string());
  for (size_t ti = 0; ti < kept.size(); ++ti) {
    const T& t = kept[ti];
    int64_t n = 1;
    for (int64_t s : t.shape) n *= s;
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = std::sin(i * 0.37f + ti) * 0.05f + (t.shape.size() == 1 ? 1.0f : 0.0f);
    std::vector<uint8_t> bytes(dtype_row_bytes(t.type, n));
    kernels::row_from_f32(v.data(), t.type, bytes.data(), n);
    w.write_data(bytes.data(), bytes.size());
  }
  w.finish();
  return path;
}

}  // namespace anelm::testing::loader
