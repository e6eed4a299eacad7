// make_model: valid, deterministic files; GGUF and HF forms of one seed bind identical weights.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/error.h"
#include "engine/gguf.h"
#include "tools/model_maker.h"
#include "engine/kernels/quantize.h"
#include "tests/engine/loader_fixtures.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

using namespace anelm::tools;

namespace fs = std::filesystem;
using anelm::testing::make_temp_dir;
using namespace anelm::testing::loader;

std::vector<float> values(const TensorView& t) {
  std::vector<float> out(t.numel());
  kernels::row_to_f32(t.dtype, t.data, out.data(), t.numel());
  return out;
}

// llama.cpp's converter permutes Q/K rows; map a GGUF row back to the HF row it holds.
int64_t hf_row(int64_t r, int64_t rows, int heads) {
  const int64_t hd = rows / heads, head = r / hd, w = r % hd;
  return head * hd + (w % 2) * (hd / 2) + w / 2;
}

// Max |gguf - hf| over a tensor, un-permuting rows when `heads` > 0.
double max_diff(const TensorView& g, const TensorView& h, int heads = 0) {
  EXPECT_EQ(g.numel(), h.numel()) << g.name;
  std::vector<float> a = values(g), b = values(h);
  const int64_t cols = g.cols(), rows = g.numel() / cols;
  double d = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t s = heads ? hf_row(r, rows, heads) : r;
    for (int64_t c = 0; c < cols; ++c) d = std::max(d, static_cast<double>(std::fabs(a[r * cols + c] - b[s * cols + c])));
  }
  return d;
}

void expect_same_model(const LoadedModel& g, const LoadedModel& h, bool permuted) {
  const ModelConfig &cg = g.config, &ch = h.config;
  EXPECT_EQ(cg.n_layers, ch.n_layers);
  EXPECT_EQ(cg.d_model, ch.d_model);
  EXPECT_EQ(cg.vocab_size, ch.vocab_size);
  EXPECT_EQ(cg.tie_embeddings, ch.tie_embeddings);
  EXPECT_EQ(cg.qkv_bias, ch.qkv_bias);
  EXPECT_EQ(cg.bos_id, ch.bos_id);
  EXPECT_EQ(cg.eos_ids, ch.eos_ids);
  EXPECT_FLOAT_EQ(cg.rope_theta, ch.rope_theta);
  EXPECT_FLOAT_EQ(cg.rms_eps, ch.rms_eps);
  EXPECT_EQ(cg.rope_layout, permuted ? RopeLayout::kInterleaved : RopeLayout::kHalf);
  EXPECT_EQ(ch.rope_layout, RopeLayout::kHalf);
  const ModelWeights &wg = g.weights, &wh = h.weights;
  EXPECT_EQ(max_diff(wg.tok_embd, wh.tok_embd), 0.0);
  EXPECT_EQ(max_diff(wg.out_norm, wh.out_norm), 0.0);
  EXPECT_EQ(max_diff(wg.lm_head, wh.lm_head), 0.0);
  for (size_t l = 0; l < wg.layers.size(); ++l) {
    const LayerWeights &a = wg.layers[l], &b = wh.layers[l];
    EXPECT_EQ(max_diff(a.wq, b.wq, permuted ? cg.n_heads : 0), 0.0) << l;
    EXPECT_EQ(max_diff(a.wk, b.wk, permuted ? cg.n_kv_heads : 0), 0.0) << l;
    for (auto [x, y] : {std::pair{&a.wv, &b.wv}, {&a.wo, &b.wo}, {&a.w_gate, &b.w_gate}, {&a.w_up, &b.w_up},
                        {&a.w_down, &b.w_down}, {&a.attn_norm, &b.attn_norm}, {&a.ffn_norm, &b.ffn_norm}}) {
      EXPECT_EQ(max_diff(*x, *y), 0.0) << x->name;
    }
    if (cg.qkv_bias) {
      EXPECT_EQ(max_diff(a.bq, b.bq), 0.0);
      EXPECT_EQ(max_diff(a.bk, b.bk), 0.0);
      EXPECT_EQ(max_diff(a.bv, b.bv), 0.0);
    }
  }
}

TEST(ModelMaker, GgufAndHfFormsBindIdenticalValues) {
  for (Arch arch : {Arch::kQwen2, Arch::kLlama}) {
    for (DType dt : {DType::kF16, DType::kBF16, DType::kF32}) {
      fs::path dir = make_temp_dir("maker");
      MakeModelOptions o;
      o.arch = arch;
      o.dtype = dt;
      o.seed = 99;
      MadeModel g = make_model(o, (dir / "m.gguf").string());
      o.format = ModelFormat::kHf;
      MadeModel h = make_model(o, (dir / "hf").string());
      EXPECT_EQ(g.n_params, h.n_params);
      auto mg = load_model(g.path), mh = load_model(h.path);
      SCOPED_TRACE(std::string(arch_name(arch)) + " " + dtype_name(dt));
      EXPECT_EQ(mg->weights.layers[0].wq.dtype, dt);
      EXPECT_EQ(mh->weights.layers[0].wq.dtype, dt);
      expect_same_model(*mg, *mh, arch == Arch::kLlama);
      EXPECT_EQ(mg->config.tie_embeddings, arch == Arch::kQwen2);
    }
  }
}

TEST(ModelMaker, TinyShapeAndWeightStatistics) {
  fs::path dir = make_temp_dir("maker");
  MadeModel m = make_model({}, (dir / "q.gguf").string());
  EXPECT_EQ(m.config.n_layers, 2);
  EXPECT_EQ(m.config.d_model, 64);
  EXPECT_EQ(m.config.n_heads, 4);
  EXPECT_EQ(m.config.n_kv_heads, 2);
  EXPECT_EQ(m.config.d_ff, 128);
  EXPECT_EQ(m.config.vocab_size, 512);
  auto lm = load_model(m.path);
  std::vector<float> w = values(lm->weights.layers[1].w_up), n = values(lm->weights.layers[1].ffn_norm);
  double sum = 0, sq = 0;
  for (float v : w) sum += v, sq += v * v;
  const double mean = sum / w.size(), sd = std::sqrt(sq / w.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(sd, 2.0 / 8, 0.02);  // 2 / sqrt(fan_in = 64)
  for (float v : n) EXPECT_NEAR(v, 1.0f, 0.3f);
}

TEST(ModelMaker, DeterministicPerSeed) {
  fs::path dir = make_temp_dir("maker");
  MakeModelOptions o;
  o.seed = 5;
  make_model(o, (dir / "a.gguf").string());
  make_model(o, (dir / "b.gguf").string());
  o.seed = 6;
  make_model(o, (dir / "c.gguf").string());
  EXPECT_EQ(read_file(dir / "a.gguf"), read_file(dir / "b.gguf"));
  EXPECT_NE(read_file(dir / "a.gguf"), read_file(dir / "c.gguf"));
}

TEST(ModelMaker, Q8_0GgufOnly) {
  fs::path dir = make_temp_dir("maker");
  MakeModelOptions o;
  o.dtype = DType::kQ8_0;
  MadeModel m = make_model(o, (dir / "q8.gguf").string());
  auto lm = load_model(m.path);
  EXPECT_EQ(lm->weights.layers[0].wk.dtype, DType::kQ8_0);
  EXPECT_EQ(lm->weights.tok_embd.dtype, DType::kQ8_0);
  EXPECT_EQ(lm->weights.layers[0].bk.dtype, DType::kF32);
  auto g = GgufFile::open(m.path);
  EXPECT_EQ(g->get_int("general.file_type"), 7);
  EXPECT_EQ(g->get_int("general.quantization_version"), 2);
  // Same values as the f16 model up to Q8_0 rounding.
  o.dtype = DType::kF32;
  auto ref = load_model(make_model(o, (dir / "f32.gguf").string()).path);
  EXPECT_LT(max_diff(lm->weights.layers[1].w_down, ref->weights.layers[1].w_down), 0.01);
  o.dtype = DType::kQ8_0;
  o.format = ModelFormat::kHf;
  EXPECT_THROW(make_model(o, (dir / "hf").string()), Error);
  o.format = ModelFormat::kGguf;
  o.shape = "huge";
  EXPECT_THROW(make_model(o, (dir / "x.gguf").string()), Error);
}

TEST(ModelMaker, BlockTypesWithLlamaCppFallback) {
  fs::path dir = make_temp_dir("maker");
  MakeModelOptions o;
  o.shape = "tiny256";  // every row a multiple of 256
  o.dtype = DType::kF32;
  auto ref = load_model(make_model(o, (dir / "f32.gguf").string()).path);
  o.dtype = DType::kQ4_K;
  auto lm = load_model(make_model(o, (dir / "q4_k.gguf").string()).path);
  EXPECT_EQ(lm->weights.layers[0].wk.dtype, DType::kQ4_K);
  EXPECT_EQ(lm->weights.tok_embd.dtype, DType::kQ4_K);
  EXPECT_EQ(lm->weights.layers[0].bk.dtype, DType::kF32);
  // The f32 values, quantized (Q4_K: a step of about 1/15 of a 32-element run's span).
  const TensorView &q = lm->weights.layers[1].w_down, &f = ref->weights.layers[1].w_down;
  const std::vector<float> a = values(q), b = values(f);
  double err = 0, power = 0;
  for (size_t i = 0; i < a.size(); ++i) err += (a[i] - b[i]) * (a[i] - b[i]), power += b[i] * b[i];
  EXPECT_LT(std::sqrt(err / power), 0.09);
  auto g = GgufFile::open(lm->path);
  EXPECT_EQ(g->get_int("general.file_type"), 14);  // LLAMA_FTYPE_MOSTLY_Q4_K_S
  EXPECT_EQ(g->get_int("general.quantization_version"), 2);

  // Shape "tiny": rows of 64 and 128 take llama.cpp's 32-element fallback.
  o.shape = "tiny";
  o.dtype = DType::kQ6_K;
  lm = load_model(make_model(o, (dir / "q6_k.gguf").string()).path);
  EXPECT_EQ(lm->weights.layers[0].wq.dtype, DType::kQ8_0);
  EXPECT_EQ(lm->weights.layers[0].w_down.dtype, DType::kQ8_0);
  o.format = ModelFormat::kHf;
  EXPECT_THROW(make_model(o, (dir / "hf").string()), Error);
}

TEST(ModelMaker, SyntheticVocabIsByteLevelBpe) {
  fs::path dir = make_temp_dir("maker");
  MadeModel m = make_model({}, (dir / "q.gguf").string());
  auto g = GgufFile::open(m.path);
  EXPECT_EQ(g->get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(g->get_string("tokenizer.ggml.pre"), "qwen2");
  auto tokens = g->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens['a'], "a");
  EXPECT_EQ(tokens[' '], "\xc4\xa0");  // "Ġ"
  EXPECT_EQ(tokens[511], "<|im_end|>");
  EXPECT_GT(g->array_size("tokenizer.ggml.merges"), 100u);
  auto types = g->get_int_array("tokenizer.ggml.token_type");
  EXPECT_EQ(types[510], 3);
  EXPECT_EQ(types[100], 1);
  EXPECT_EQ(g->get_int("tokenizer.ggml.eos_token_id"), 511);
  EXPECT_FALSE(g->get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_NE(g->get_string("tokenizer.chat_template").find("<|im_start|>"), std::string::npos);
  // The HF form carries the same vocab as tokenizer files.
  MakeModelOptions o;
  o.format = ModelFormat::kHf;
  make_model(o, (dir / "hf").string());
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"}) {
    EXPECT_TRUE(fs::exists(dir / "hf" / f)) << f;
  }
}

TEST(ModelMaker, TokenizerCopiedFromGguf) {
  ANELM_REQUIRE_SHARED_MODEL(vocab, "ggml-vocab-llama-spm.gguf");
  fs::path dir = make_temp_dir("maker");
  MakeModelOptions o;
  o.arch = Arch::kLlama;
  o.tokenizer = vocab.string();
  MadeModel m = make_model(o, (dir / "l.gguf").string());
  EXPECT_EQ(m.config.vocab_size, 32000);
  auto src = GgufFile::open(vocab.string());
  auto out = GgufFile::open(m.path);
  for (const std::string& k : src->keys()) {
    if (k.starts_with("tokenizer.")) {
      EXPECT_EQ(out->raw_value(k), src->raw_value(k)) << k;
    }
  }
  EXPECT_EQ(load_model(m.path)->config.bos_id, 1);
  o.format = ModelFormat::kHf;  // SentencePiece vocab cannot become HF BPE files
  EXPECT_THROW(make_model(o, (dir / "hf").string()), Error);
}

TEST(ModelMaker, TokenizerFromHfDirectory) {
  ANELM_REQUIRE_SHARED_MODEL(hf, "qwen2.5-0.5b-instruct");
  fs::path dir = make_temp_dir("maker");
  MakeModelOptions o;
  o.tokenizer = hf.string();
  o.layers = 1;
  MadeModel m = make_model(o, (dir / "q.gguf").string());
  EXPECT_EQ(m.config.vocab_size, 151665);  // 151643 BPE tokens + 22 added
  EXPECT_EQ(m.config.eos_ids, std::vector<int>{151645});
  auto g = GgufFile::open(m.path);
  auto tokens = g->get_string_array("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens[151644], "<|im_start|>");
  EXPECT_EQ(g->get_int_array("tokenizer.ggml.token_type")[151644], 3);
  EXPECT_EQ(g->array_size("tokenizer.ggml.merges"), 151387u);
  EXPECT_EQ(g->get_int("tokenizer.ggml.padding_token_id"), 151643);
  EXPECT_EQ(g->get_int("tokenizer.ggml.bos_token_id"), 151643);
  EXPECT_NE(g->get_string("tokenizer.chat_template").find("You are Qwen"), std::string::npos);
  o.format = ModelFormat::kHf;
  MadeModel h = make_model(o, (dir / "hf").string());
  EXPECT_TRUE(fs::exists(dir / "hf" / "vocab.json"));
  EXPECT_TRUE(fs::exists(dir / "hf" / "tokenizer_config.json"));
  auto lg = load_model(m.path), lh = load_model(h.path);
  expect_same_model(*lg, *lh, false);
}

}  // namespace
}  // namespace anelm::engine
