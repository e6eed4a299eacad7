// load_model: real GGUF files, role binding, all-at-once shape/dtype errors, requant, tying, HF dirs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/error.h"
#include "engine/kv_cache.h"
#include "tools/model_info.h"
#include "engine/model_loader.h"
#include "engine/kernels/quantize.h"
#include "engine/safetensors.h"
#include "engine/thread_pool.h"
#include "engine/weight_residency.h"
#include "tests/engine/loader_fixtures.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

using namespace anelm::tools;

namespace fs = std::filesystem;
using anelm::testing::make_temp_dir;
using namespace anelm::testing::loader;

std::vector<float> to_f32(const TensorView& t) {
  std::vector<float> out(t.numel());
  kernels::row_to_f32(t.dtype, t.data, out.data(), t.numel());
  return out;
}

Error load_error(const fs::path& p) {
  try {
    load_model(p.string());
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error loading " << p;
  return Error(ErrorKind::kInternal, "none");
}

void expect_all(const Error& e, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << p << " not in: " << e.what();
}

TEST(ModelLoader, Stories260K) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  auto m = load_model(path.string());
  const ModelConfig& c = m->config;
  EXPECT_EQ(m->format, ModelFormat::kGguf);
  EXPECT_EQ(c.arch, Arch::kLlama);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.d_model, 64);
  EXPECT_EQ(c.d_ff, 172);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_ctx, 2048);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.rope_layout, RopeLayout::kInterleaved);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_EQ(c.bos_id, 1);
  EXPECT_EQ(c.eos_ids, std::vector<int>{2});
  const ModelWeights& w = m->weights;
  ASSERT_EQ(w.layers.size(), 5u);
  EXPECT_EQ(w.tok_embd.dtype, DType::kF32);
  EXPECT_NE(w.lm_head.data, w.tok_embd.data);
  EXPECT_EQ(w.layers[4].wk.shape[0], 32);
  EXPECT_EQ(w.layers[4].wk.shape[1], 64);
  EXPECT_EQ(w.layers[0].w_down.shape[1], 172);
  EXPECT_TRUE(w.layers[0].bq.empty());
  EXPECT_EQ(m->weight_bytes, 1171200);  // 292,800 f32 parameters
}

// Residency moves every file-mapped tensor, norms included, into the model's own memory once; the
// bytes (and so every executor's reads) are unchanged. A norm left in the mapping kept the file's
// page-cache folio around it mapped (2 MiB each: ~92 MB of a Qwen2.5-0.5B Q4_K_M file).
TEST(ModelLoader, ResidentWeightsAreTheSameBytesOwnedOnce) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  auto mapped = load_model(path.string());
  auto m = load_model(path.string());
  const size_t owners_before = m->owners.size();
  std::vector<const void*> before;  // every view's address in m's own mapping
  auto views = [](ModelWeights& w) {
    std::vector<TensorView*> v = {&w.tok_embd, &w.out_norm, &w.lm_head};
    for (LayerWeights& l : w.layers) {
      for (TensorView* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down}) {
        v.push_back(t);
      }
    }
    return v;
  };
  for (TensorView* t : views(m->weights)) before.push_back(t->data);
  ThreadPool pool(2);
  make_resident(*m, pool);
  const auto after = views(m->weights);
  for (size_t i = 0; i < after.size(); ++i) EXPECT_NE(after[i]->data, before[i]) << after[i]->name << " left in the mapping";
  EXPECT_EQ(m->owners.size(), owners_before + 1);  // one buffer for every copied tensor
  auto same = [](const TensorView& a, const TensorView& b) {
    ASSERT_EQ(a.nbytes, b.nbytes);
    EXPECT_EQ(std::memcmp(a.data, b.data, static_cast<size_t>(a.nbytes)), 0) << a.name;
  };
  same(m->weights.tok_embd, mapped->weights.tok_embd);
  same(m->weights.lm_head, mapped->weights.lm_head);
  same(m->weights.out_norm, mapped->weights.out_norm);
  for (size_t l = 0; l < m->weights.layers.size(); ++l) {
    const LayerWeights &a = m->weights.layers[l], &b = mapped->weights.layers[l];
    for (auto [x, y] : {std::pair{&a.wq, &b.wq}, {&a.wk, &b.wk}, {&a.wv, &b.wv}, {&a.wo, &b.wo},
                        {&a.w_gate, &b.w_gate}, {&a.w_up, &b.w_up}, {&a.w_down, &b.w_down},
                        {&a.attn_norm, &b.attn_norm}, {&a.ffn_norm, &b.ffn_norm}})
      same(*x, *y);
  }
}

// The split copy of background residency: views keep reading the mapping until adopt(), which
// then points them at the same bytes in the owned buffer.
TEST(ModelLoader, ResidentCopyLeavesViewsOnTheMappingUntilAdopted) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  auto m = load_model(path.string());
  const void* mapped_wq = m->weights.layers[0].wq.data;
  const std::vector<uint8_t> before(static_cast<const uint8_t*>(mapped_wq),
                                    static_cast<const uint8_t*>(mapped_wq) + m->weights.layers[0].wq.nbytes);
  ResidentCopy copy(*m);
  EXPECT_FALSE(copy.done());
  std::thread t([&] { copy.copy(nullptr); });
  t.join();
  EXPECT_TRUE(copy.done());
  EXPECT_EQ(m->weights.layers[0].wq.data, mapped_wq);  // not adopted yet
  copy.adopt();
  const TensorView& wq = m->weights.layers[0].wq;
  EXPECT_NE(wq.data, mapped_wq);
  EXPECT_EQ(std::memcmp(wq.data, before.data(), before.size()), 0);
}

TEST(ModelLoader, LlamaTinyRandomF16) {
  ANELM_REQUIRE_SHARED_MODEL(path, "llama-2-tiny-random.gguf");
  auto m = load_model(path.string());
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.n_layers, 1);
  EXPECT_EQ(c.d_model, 8);
  EXPECT_EQ(c.d_ff, 32);
  EXPECT_EQ(c.n_heads, 2);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.rope_dim, 4);
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.max_ctx, 4096);
  EXPECT_EQ(m->weights.layers[0].wq.dtype, DType::kF16);
  EXPECT_EQ(m->weights.tok_embd.dtype, DType::kF16);
  EXPECT_EQ(m->weights.out_norm.dtype, DType::kF32);
  EXPECT_EQ(m->weights.lm_head.shape[0], 32000);
}

TEST(ModelLoader, RequantRealModelKeepsOddRows) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  auto ref = load_model(path.string());
  auto m = load_model(path.string(), DType::kQ8_0);
  EXPECT_EQ(m->weights.layers[0].wq.dtype, DType::kQ8_0);
  EXPECT_EQ(m->weights.layers[0].w_down.dtype, DType::kF32);  // 172 columns: not whole blocks
  EXPECT_EQ(m->weights.layers[0].attn_norm.dtype, DType::kF32);
  std::vector<float> a = to_f32(ref->weights.layers[2].w_up), b = to_f32(m->weights.layers[2].w_up);
  float amax = 0, maxerr = 0;
  for (size_t i = 0; i < a.size(); ++i) amax = std::max(amax, std::fabs(a[i])), maxerr = std::max(maxerr, std::fabs(a[i] - b[i]));
  EXPECT_LE(maxerr, amax / 127.0f * 0.5f + 1e-6f);
  EXPECT_LT(m->weight_bytes, ref->weight_bytes);
}

// A re-quantising load reports every tensor, in order, ending at done == total.
TEST(ModelLoader, RequantReportsProgressPerTensor) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  std::vector<std::pair<int64_t, int64_t>> seen;
  auto m = load_model(path.string(), DType::kQ8_0, [&](int64_t done, int64_t total) { seen.emplace_back(done, total); });
  ASSERT_GE(seen.size(), 2u + 9u * static_cast<size_t>(m->config.n_layers));  // 9+ tensors per layer
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].first, static_cast<int64_t>(i)) << i;
    EXPECT_EQ(seen[i].second, seen.back().second) << i;
  }
  EXPECT_EQ(seen.back().first, seen.back().second);
}

TEST(ModelLoader, TinyGgufRequantToEveryType) {
  fs::path dir = make_temp_dir("loader");
  fs::path p = write_tiny_gguf(dir);
  auto ref = load_model(p.string());
  for (DType t : {DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kF32}) {
    auto m = load_model(p.string(), t);
    EXPECT_EQ(m->weights.layers[1].w_gate.dtype, t) << dtype_name(t);
    EXPECT_EQ(m->weights.tok_embd.dtype, t);
    EXPECT_EQ(m->weights.layers[1].ffn_norm.dtype, DType::kF32);
    std::vector<float> a = to_f32(ref->weights.layers[1].wq), b = to_f32(m->weights.layers[1].wq);
    double err = 0;
    for (size_t i = 0; i < a.size(); ++i) err = std::max(err, static_cast<double>(std::fabs(a[i] - b[i])));
    const double tol = t == DType::kQ4_0 ? 0.05 / 8 * 1.01 : t == DType::kQ8_0 ? 0.05 / 127 : 0.05 / 128;
    EXPECT_LE(err, tol) << dtype_name(t);
  }
}

TEST(ModelLoader, F16NormsBecomeOwnedF32) {
  fs::path dir = make_temp_dir("loader");
  TinySpec spec;
  spec.f16_norms = true;
  auto m = load_model(write_tiny_gguf(dir, spec).string());
  const TensorView& n = m->weights.layers[0].attn_norm;
  EXPECT_EQ(n.dtype, DType::kF32);
  EXPECT_EQ(n.nbytes, 64 * 4);
  EXPECT_NEAR(static_cast<const float*>(n.data)[0], 1.0f + std::sin(3 * 0.0f + 3) * 0.05f, 1e-3);
}

TEST(ModelLoader, MissingTensorNamed) {
  fs::path dir = make_temp_dir("loader");
  TinySpec spec;
  spec.omit = "blk.1.ffn_up.weight";
  Error e = load_error(write_tiny_gguf(dir, spec));
  EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  expect_all(e, {"blk.1.ffn_up.weight", "missing", "[d_ff, d_model]", "tiny.gguf"});
}

TEST(ModelLoader, AllProblemsReportedAtOnce) {
  fs::path dir = make_temp_dir("loader");
  TinySpec spec;
  spec.omit = "blk.0.attn_v.weight";
  spec.reshape = "blk.1.attn_k.weight";
  spec.q8_norm = "output_norm.weight";
  Error e = load_error(write_tiny_gguf(dir, spec));
  EXPECT_EQ(e.kind(), ErrorKind::kFormat);
  expect_all(e, {"3 problem(s)", "'blk.0.attn_v.weight' is missing", "'blk.1.attn_k.weight' has shape [3, 5], expected [kv_dim, d_model] = [32, 64]",
                 "'output_norm.weight' is q8_0"});
}

TEST(ModelLoader, QwenNeedsBiases) {
  fs::path dir = make_temp_dir("loader");
  TinySpec spec;
  spec.qwen2 = true;
  auto m = load_model(write_tiny_gguf(dir, spec).string());
  EXPECT_TRUE(m->config.qkv_bias);
  EXPECT_EQ(m->config.rope_layout, RopeLayout::kHalf);
  EXPECT_EQ(m->weights.layers[1].bk.shape[0], 32);
  spec.omit = "blk.0.attn_q.bias";
  fs::path dir2 = make_temp_dir("loader");
  expect_all(load_error(write_tiny_gguf(dir2, spec)), {"blk.0.attn_q.bias", "[q_dim]"});
}

TEST(ModelLoader, AbsentHeadIsTied) {
  fs::path dir = make_temp_dir("loader");
  TinySpec spec;
  spec.omit = "output.weight";
  auto m = load_model(write_tiny_gguf(dir, spec).string());
  EXPECT_TRUE(m->config.tie_embeddings);
  EXPECT_EQ(m->weights.lm_head.data, m->weights.tok_embd.data);
  auto q = load_model(write_tiny_gguf(dir, spec).string(), DType::kQ8_0);
  EXPECT_EQ(q->weights.lm_head.data, q->weights.tok_embd.data);
  EXPECT_EQ(q->weights.lm_head.dtype, DType::kQ8_0);
}

TEST(ModelLoader, VocabOnlyAndNonModelPaths) {
  fs::path dir = make_temp_dir("loader");
  write_file(dir / "junk.bin", "not a model at all");
  expect_all(load_error(dir / "junk.bin"), {"junk.bin", "neither a GGUF"});
  expect_all(load_error(dir / "missing.gguf"), {"does not exist"});
  expect_all(load_error(dir), {"config.json"});
  ANELM_REQUIRE_SHARED_MODEL(vocab, "ggml-vocab-qwen2.gguf");
  Error e = load_error(vocab);
  expect_all(e, {"no tensors"});
}

TEST(ModelLoader, InvalidConfigListsEveryProblem) {
  fs::path dir = make_temp_dir("loader");
  RawGguf g;
  g.kv = {{"general.architecture", kv_str("llama")}, {"llama.block_count", kv_u32(0)},
          {"llama.embedding_length", kv_u32(64)}, {"llama.feed_forward_length", kv_u32(128)},
          {"llama.attention.head_count", kv_u32(6)}, {"llama.attention.head_count_kv", kv_u32(4)},
          {"llama.attention.layer_norm_rms_epsilon", kv_f32(-1.0f)}};
  write_file(dir / "cfg.gguf", g.bytes());
  Error e = load_error(dir / "cfg.gguf");
  EXPECT_EQ(e.kind(), ErrorKind::kFormat);
  expect_all(e, {"n_layers = 0", "n_heads = 6", "rms_eps = -1", "vocab_size = 0", "cfg.gguf"});
}

// Hostile GGUF sizes: key_length overflowed q_dim() and passed validation; block_count 2^31-1 ended
// in a bare std::bad_alloc. Both are now format errors naming field and value.
TEST(ModelLoader, HostileSizesAreNamed) {
  fs::path dir = make_temp_dir("loader");
  auto gguf = [&](const std::string& key, uint32_t value) {
    RawGguf g;
    g.kv = {{"general.architecture", kv_str("llama")}, {"llama.block_count", kv_u32(2)},
            {"llama.embedding_length", kv_u32(32)}, {"llama.feed_forward_length", kv_u32(128)},
            {"llama.attention.head_count", kv_u32(4)}, {"llama.vocab_size", kv_u32(100)},
            {"llama.attention.layer_norm_rms_epsilon", kv_f32(1e-5f)}};
    for (auto& [k, v] : g.kv) {
      if (k == key) v = kv_u32(value);
    }
    if (key == "llama.attention.key_length") g.kv.push_back({key, kv_u32(value)});
    write_file(dir / "h.gguf", g.bytes());
    return load_error(dir / "h.gguf");
  };
  Error e = gguf("llama.attention.key_length", 1073741832);
  EXPECT_EQ(e.kind(), ErrorKind::kFormat);
  expect_all(e, {"h.gguf", "head_dim = 1073741832 (must be <= 1048576)", "head_dim * n_heads = 4294967328"});
  e = gguf("llama.block_count", 2147483647);
  EXPECT_EQ(e.kind(), ErrorKind::kFormat);
  expect_all(e, {"n_layers = 2147483647", "must be <= 4096"});
}

// A KV cache larger than the machine is a clear error, not std::bad_alloc (or an OOM kill later).
TEST(ModelLoader, OversizedKvCacheIsAClearError) {
  ModelConfig c;
  c.n_layers = 64, c.n_kv_heads = 64, c.head_dim = 1024;
  try {
    KvCache kv(c, 1 << 20, DType::kF32);  // 2 x 2^44 bytes
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kResourceExhausted);
    expect_all(e, {"not enough memory for the KV cache: 35184372088832 bytes for --ctx 1048576"});
  }
  c.n_layers = 1 << 30, c.n_kv_heads = 1 << 30;
  try {
    KvCache kv(c, 1 << 30, DType::kF32);
    FAIL();
  } catch (const Error& e) {
    expect_all(e, {"more than 2^63 bytes for --ctx 1073741824"});
  }
  fs::path dir = make_temp_dir("loader");
  EngineOptions opts;
  opts.model_path = write_tiny_gguf(dir).string();
  opts.ctx = 2147483647;  // 2 layers x 2 kv heads x 16 x f32 x K and V: 1 TiB
  opts.kv_type = DType::kF32;
  opts.threads = 1;
  try {
    Engine::load(opts);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kResourceExhausted);
    expect_all(e, {"not enough memory for the KV cache", "--ctx 2147483647"});
  }
}

TEST(ModelLoader, UnsupportedArchitectureNamed) {
  fs::path dir = make_temp_dir("loader");
  RawGguf g;
  g.kv = {{"general.architecture", kv_str("mamba")}};
  write_file(dir / "m.gguf", g.bytes());
  Error e = load_error(dir / "m.gguf");
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  expect_all(e, {"'mamba'"});
}

// An HF directory written by hand: config.json + model.safetensors (bf16), tied embeddings.
TEST(ModelLoader, HfDirectoryBindsAndChecks) {
  fs::path dir = make_temp_dir("loader-hf");
  write_file(dir / "config.json", R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96,
    "vocab_size": 40, "rms_norm_eps": 1e-5, "tie_word_embeddings": true, "eos_token_id": [2, 3]})");
  std::vector<SafetensorsWriter::Decl> decls = {
      {"model.embed_tokens.weight", DType::kBF16, {40, 64}}, {"model.norm.weight", DType::kBF16, {64}},
      {"model.layers.0.input_layernorm.weight", DType::kBF16, {64}},
      {"model.layers.0.self_attn.q_proj.weight", DType::kBF16, {64, 64}},
      {"model.layers.0.self_attn.k_proj.weight", DType::kBF16, {32, 64}},
      {"model.layers.0.self_attn.v_proj.weight", DType::kBF16, {32, 64}},
      {"model.layers.0.self_attn.o_proj.weight", DType::kBF16, {64, 64}},
      {"model.layers.0.post_attention_layernorm.weight", DType::kBF16, {64}},
      {"model.layers.0.mlp.gate_proj.weight", DType::kBF16, {96, 64}},
      {"model.layers.0.mlp.up_proj.weight", DType::kBF16, {96, 64}},
      {"model.layers.0.mlp.down_proj.weight", DType::kBF16, {64, 96}}};
  {
    SafetensorsWriter w((dir / "model.safetensors").string(), decls);
    for (const auto& d : decls) {
      int64_t n = 1;
      for (int64_t s : d.shape) n *= s;
      std::vector<uint16_t> v(n, f32_to_bf16(0.5f));
      w.append_data(v.data(), v.size() * 2);
    }
    w.finish();
  }
  auto m = load_model(dir.string());
  EXPECT_EQ(m->format, ModelFormat::kHf);
  EXPECT_EQ(m->config.rope_layout, RopeLayout::kHalf);
  EXPECT_EQ(m->config.eos_ids, (std::vector<int>{2, 3}));
  EXPECT_EQ(m->weights.layers[0].wk.dtype, DType::kBF16);
  EXPECT_EQ(m->weights.out_norm.dtype, DType::kF32);
  EXPECT_FLOAT_EQ(static_cast<const float*>(m->weights.out_norm.data)[63], 0.5f);
  EXPECT_EQ(m->weights.lm_head.data, m->weights.tok_embd.data);
  auto q = load_model((dir / "model.safetensors").string(), DType::kQ4_0);
  EXPECT_EQ(q->weights.layers[0].w_down.dtype, DType::kQ4_0);
  EXPECT_FLOAT_EQ(to_f32(q->weights.layers[0].w_down)[5], 0.5f);

  ModelInfo info = model_info(dir.string());
  EXPECT_EQ(info.n_tensors, 11);
  ASSERT_EQ(info.by_dtype.size(), 1u);
  EXPECT_EQ(info.by_dtype[0].dtype, "BF16");
  EXPECT_EQ(info.total_bytes, info.n_params * 2);

  // A wrong shape in config.json against the same file names tensor and both shapes.
  write_file(dir / "config.json", R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
    "vocab_size": 40, "rms_norm_eps": 1e-5, "tie_word_embeddings": true})");
  Error e = load_error(dir);
  expect_all(e, {"3 problem(s)", "model.layers.0.mlp.gate_proj.weight", "[96, 64]", "[128, 64]"});
}

TEST(ModelInfo, GgufCountsPerType) {
  ANELM_REQUIRE_SHARED_MODEL(path, "llama-2-tiny-random.gguf");
  ModelInfo info = model_info(path.string());
  EXPECT_EQ(info.gguf_version, 3u);
  EXPECT_EQ(info.n_tensors, 12);
  ASSERT_EQ(info.by_dtype.size(), 2u);
  EXPECT_EQ(info.by_dtype[0].dtype, "f16");
  EXPECT_EQ(info.by_dtype[0].count, 9);
  EXPECT_EQ(info.by_dtype[1].dtype, "f32");
  EXPECT_EQ(info.by_dtype[1].count, 3);
  EXPECT_EQ(info.by_dtype[1].bytes, 96);
  EXPECT_EQ(info.config.vocab_size, 32000);
  EXPECT_EQ(info.file_bytes, 1750560);
}

}  // namespace
}  // namespace anelm::engine
