// ModelConfig: validate() lists every problem; HF config.json and GGUF metadata map to the right fields.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/config_gguf.h"
#include "engine/config_hf.h"
#include "engine/error.h"
#include "engine/gguf_writer.h"
#include "tests/engine/loader_fixtures.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;
using anelm::testing::make_temp_dir;
using namespace anelm::testing::loader;
using nlohmann::json;

ModelConfig good() {
  ModelConfig c;
  c.n_layers = 2, c.d_model = 64, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 16, c.d_ff = 128;
  c.vocab_size = 100, c.max_ctx = 256, c.rope_dim = 16, c.bos_id = 1, c.eos_ids = {2};
  return c;
}

std::string validate_msg(const ModelConfig& c) {
  try {
    c.validate("src.gguf");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFormat);
    return e.what();
  }
  return "";
}

TEST(ModelConfig, ValidPasses) { EXPECT_NO_THROW(good().validate("x")); }

TEST(ModelConfig, ValidateListsEveryProblem) {
  ModelConfig c = good();
  c.n_layers = 0;
  c.n_kv_heads = 3;
  c.rms_eps = 0.5f;
  c.bos_id = 100;
  c.eos_ids = {2, -5};
  c.rope_dim = 20;
  std::string m = validate_msg(c);
  for (const char* p : {"src.gguf", "n_layers = 0", "multiple of n_kv_heads = 3", "rms_eps = 0.5", "bos_id = 100",
                        "eos_id = -5", "rope_dim = 20"}) {
    EXPECT_NE(m.find(p), std::string::npos) << p << " not in: " << m;
  }
}

TEST(ModelConfig, HeadDimMustSplitDModel) {
  ModelConfig c = good();
  c.head_dim = 8;
  c.rope_dim = 8;
  EXPECT_NE(validate_msg(c).find("head_dim * n_heads = 32 must equal d_model = 64"), std::string::npos);
  c = good();
  c.vocab_size = -1;
  c.d_ff = 0;
  c.rope_theta = 0;
  std::string m = validate_msg(c);
  EXPECT_NE(m.find("vocab_size = -1"), std::string::npos);
  EXPECT_NE(m.find("d_ff = 0"), std::string::npos);
  EXPECT_NE(m.find("rope_theta = 0"), std::string::npos);
}

TEST(ModelConfig, Qwen3HeadDimNeedNotSplitDModel) {
  ModelConfig c = good();  // Qwen3-0.6B's proportions: 4 x 32 = 128 query columns for d_model 64
  c.arch = Arch::kQwen3;
  c.head_dim = 32;
  c.rope_dim = 32;
  EXPECT_NO_THROW(c.validate("q3.gguf"));
  c.arch = Arch::kLlama;
  EXPECT_NE(validate_msg(c).find("head_dim * n_heads = 128 must equal d_model = 64"), std::string::npos);
}

// Sizes from a hostile file: products used to wrap in int (q_dim()) and counts were unbounded.
TEST(ModelConfig, SizesAreBoundedWithoutOverflow) {
  ModelConfig c = good();
  c.head_dim = 1073741832;  // 4 * 1073741832 wraps to 32 in int
  c.rope_dim = 16;
  c.d_model = 32;
  std::string m = validate_msg(c);
  EXPECT_NE(m.find("head_dim = 1073741832"), std::string::npos) << m;
  EXPECT_NE(m.find("head_dim * n_heads = 4294967328 must equal d_model = 32"), std::string::npos) << m;
  c = good();
  c.head_dim = 65536;  // in range alone, but 4 x 65536 x 64 heads is not
  c.n_heads = 64;
  c.n_kv_heads = 64;
  m = validate_msg(c);
  EXPECT_NE(m.find("n_heads * head_dim = 4194304 must be <= 1048576"), std::string::npos) << m;
  c = good();
  c.n_layers = 2147483647;
  c.vocab_size = 1 << 30;
  c.n_kv_heads = 1 << 20;
  c.n_heads = 1 << 20;
  m = validate_msg(c);
  for (const char* p : {"n_layers = 2147483647 (must be <= 4096)", "vocab_size = 1073741824", "n_heads = 1048576",
                        "n_kv_heads = 1048576"}) {
    EXPECT_NE(m.find(p), std::string::npos) << p << " not in: " << m;
  }
  c = good();
  c.d_ff = ModelLimits::kMaxDim + 1;
  EXPECT_NE(validate_msg(c).find("d_ff = 1048577"), std::string::npos);
}

TEST(ConfigHf, HostileValuesAreFormatErrors) {
  auto msg = [](const std::string& text) -> std::string {
    try {
      config_from_hf_json(text, "config.json").validate("config.json");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::string base = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100)";
  // Mistyped fields used to escape as nlohmann::json::type_error.
  EXPECT_NE(msg(base + R"(, "attention_bias": 1})").find("'attention_bias' must be a bool"), std::string::npos);
  EXPECT_NE(msg(base + R"(, "rope_scaling": {"rope_type": 3}})").find("rope_scaling"), std::string::npos);
  EXPECT_NE(msg(base + R"(, "eos_token_id": 99999999999})").find("'eos_token_id' must be an int32"), std::string::npos);
  // An id list is bounded (each id is checked against the ones before it).
  std::string ids = "[0";
  for (int i = 1; i < 300; ++i) ids += "," + std::to_string(i);
  EXPECT_NE(msg(base + R"(, "eos_token_id": )" + ids + "]}").find("'eos_token_id' lists 300 ids"), std::string::npos);
  EXPECT_NE(msg(base + R"(, "head_dim": 18446744073709551615})").find("'head_dim'"), std::string::npos);
  // A huge head_dim with llama3 rope scaling must not size a table before validation rejects it.
  EXPECT_NE(msg(base + R"(, "head_dim": 2147483646, "rope_scaling": {"rope_type": "llama3"}})").find("head_dim = 2147483646"),
            std::string::npos);
  std::string deep = base + R"(, "x": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(msg(deep).find("nests deeper than 64"), std::string::npos);
  // Parse errors name the position, not the bytes read.
  std::string bad = msg(R"({"hidden_size": secret-token-value})");
  EXPECT_NE(bad.find("invalid JSON"), std::string::npos) << bad;
  EXPECT_EQ(bad.find("secret"), std::string::npos) << bad;
}

TEST(ModelConfig, ArchNames) {
  EXPECT_STREQ(arch_name(Arch::kLlama), "llama");
  EXPECT_STREQ(arch_name(Arch::kQwen2), "qwen2");
}

TEST(ConfigHf, QwenInstructDirectory) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct");
  ModelConfig c = config_from_hf_dir(dir.string());
  EXPECT_EQ(c.arch, Arch::kQwen2);
  EXPECT_EQ(c.n_layers, 24);
  EXPECT_EQ(c.d_model, 896);
  EXPECT_EQ(c.n_heads, 14);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.d_ff, 4864);
  EXPECT_EQ(c.vocab_size, 151936);
  EXPECT_EQ(c.max_ctx, 32768);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_EQ(c.rope_layout, RopeLayout::kHalf);
  EXPECT_EQ(c.bos_id, 151643);
  EXPECT_EQ(c.eos_ids, (std::vector<int>{151645, 151643}));  // config.json, then generation_config.json
  EXPECT_EQ(c.name, "qwen2.5-0.5b-instruct");
  EXPECT_NO_THROW(c.validate("x"));
}

TEST(ConfigHf, LlamaFieldsAndDefaults) {
  ModelConfig c = config_from_hf_json(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 256,
      "num_hidden_layers": 3, "num_attention_heads": 8, "intermediate_size": 512, "vocab_size": 1000,
      "head_dim": 32, "bos_token_id": 1, "eos_token_id": [2, 7]})", "config.json");
  EXPECT_EQ(c.arch, Arch::kLlama);
  EXPECT_EQ(c.n_kv_heads, 8);  // defaults to n_heads
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.rope_dim, 32);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_EQ(c.rope_layout, RopeLayout::kHalf);  // HF weights are unpermuted
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.eos_ids, (std::vector<int>{2, 7}));
}

TEST(ConfigHf, Errors) {
  auto kind_and_msg = [](const std::string& json) -> std::pair<ErrorKind, std::string> {
    try {
      config_from_hf_json(json, "cfg/config.json");
    } catch (const Error& e) {
      return {e.kind(), e.what()};
    }
    return {ErrorKind::kInternal, "no error"};
  };
  auto [k1, m1] = kind_and_msg(R"({"architectures": ["MistralForCausalLM"]})");
  EXPECT_EQ(k1, ErrorKind::kUnsupported);
  EXPECT_NE(m1.find("MistralForCausalLM"), std::string::npos);
  auto [k2, m2] = kind_and_msg("{not json");
  EXPECT_EQ(k2, ErrorKind::kFormat);
  EXPECT_NE(m2.find("cfg/config.json"), std::string::npos);
  auto [k3, m3] = kind_and_msg(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64})");
  EXPECT_EQ(k3, ErrorKind::kNotFound);
  EXPECT_NE(m3.find("num_hidden_layers"), std::string::npos);
  auto [k4, m4] = kind_and_msg(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": "64"})");
  EXPECT_EQ(k4, ErrorKind::kFormat);
  EXPECT_NE(m4.find("hidden_size"), std::string::npos);
  fs::path dir = make_temp_dir("cfg");
  EXPECT_THROW(config_from_hf_dir(dir.string()), Error);
}

// Qwen3.5 and Phi-3 read rope_theta and partial_rotary_factor from rope_parameters (newer configs)
// or the top level (older ones); the nested value wins, and a factor outside (0, 1] is refused by name.
TEST(ConfigHf, RopeFieldsNestedOrTopLevel) {
  const json qwen35 = {{"architectures", {"Qwen3_5ForCausalLM"}}, {"hidden_size", 256}, {"num_hidden_layers", 4},
                       {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 64},
                       {"intermediate_size", 512}, {"vocab_size", 1000}, {"linear_num_key_heads", 2},
                       {"linear_num_value_heads", 4}};
  const json phi3 = {{"architectures", {"Phi3ForCausalLM"}}, {"hidden_size", 256}, {"num_hidden_layers", 2},
                     {"num_attention_heads", 4}, {"intermediate_size", 512}, {"vocab_size", 1000}};
  struct Case {
    const json* base;
    json extra;
    float theta;
    int rope_dim;
  };
  const Case cases[] = {
      {&qwen35, json::object(), 10000000.0f, 16},  // defaults: 0.25 of head_dim 64
      {&qwen35, {{"rope_theta", 5e6}, {"partial_rotary_factor", 0.5}}, 5e6f, 32},
      {&qwen35, {{"rope_theta", 5e6}, {"rope_parameters", {{"rope_theta", 1e6}, {"partial_rotary_factor", 1.0}}}}, 1e6f, 64},
      {&phi3, json::object(), 10000.0f, 64},  // defaults: every dim of head_dim 64
      {&phi3, {{"partial_rotary_factor", 0.75}}, 10000.0f, 48},
      {&phi3, {{"partial_rotary_factor", 0.75}, {"rope_parameters", {{"rope_theta", 250000.0}, {"partial_rotary_factor", 0.5}}}},
       250000.0f, 32},
  };
  for (const Case& k : cases) {
    json j = *k.base;
    j.update(k.extra);
    const ModelConfig c = config_from_hf_json(j.dump(), "config.json");
    EXPECT_FLOAT_EQ(c.rope_theta, k.theta) << j.dump();
    EXPECT_EQ(c.rope_dim, k.rope_dim) << j.dump();
  }
  for (const json* base : {&qwen35, &phi3}) {
    for (const json& bad : {json{{"partial_rotary_factor", 1.5}}, json{{"rope_parameters", {{"partial_rotary_factor", 0.0}}}}}) {
      json j = *base;
      j.update(bad);
      try {
        config_from_hf_json(j.dump(), "config.json");
        ADD_FAILURE() << "accepted " << j.dump();
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kFormat);
        EXPECT_NE(std::string(e.what()).find("partial_rotary_factor"), std::string::npos) << e.what();
      }
    }
  }
}

TEST(ConfigGguf, QwenMetadata) {
  fs::path dir = make_temp_dir("cfg");
  GgufWriter w;
  w.add_string("general.architecture", "qwen2");
  w.add_u32("qwen2.block_count", 3);
  w.add_u32("qwen2.embedding_length", 128);
  w.add_u32("qwen2.feed_forward_length", 256);
  w.add_u32("qwen2.attention.head_count", 4);
  w.add_u32("qwen2.attention.head_count_kv", 1);
  w.add_f32("qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
  w.add_f32("qwen2.rope.freq_base", 1e6f);
  w.add_u32("qwen2.context_length", 8192);
  w.add_string_array("tokenizer.ggml.tokens", std::vector<std::string>(300, "x"));
  w.add_u32("tokenizer.ggml.bos_token_id", 5);
  w.add_u32("tokenizer.ggml.eos_token_id", 6);
  w.add_u32("tokenizer.ggml.eot_token_id", 7);
  w.add_u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
  w.begin((dir / "q.gguf").string());
  w.finish();
  auto g = GgufFile::open((dir / "q.gguf").string());
  ModelConfig c = config_from_gguf(*g);
  EXPECT_EQ(c.arch, Arch::kQwen2);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.rope_dim, 32);
  EXPECT_EQ(c.n_kv_heads, 1);
  EXPECT_EQ(c.vocab_size, 300);  // from the token list: no token_embd
  EXPECT_EQ(c.max_ctx, 8192);
  EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_TRUE(c.tie_embeddings);  // no output.weight
  EXPECT_EQ(c.rope_layout, RopeLayout::kHalf);
  EXPECT_EQ(c.bos_id, 5);
  EXPECT_EQ(c.eos_ids, (std::vector<int>{6, 7}));
  EXPECT_NO_THROW(c.validate("q.gguf"));
}

// pooling_type 4 (rank) is a Qwen3 reranker with its classifier head; the head missing is a format
// error naming it; another family's rank file stays generative.
TEST(ConfigGguf, RankPoolingNeedsTheClassifierHead) {
  fs::path dir = make_temp_dir("cfg");
  auto write = [&](const std::string& arch, bool head) {
    GgufWriter w;
    w.add_string("general.architecture", arch);
    w.add_u32(arch + ".block_count", 1);
    w.add_u32(arch + ".embedding_length", 64);
    w.add_u32(arch + ".feed_forward_length", 128);
    w.add_u32(arch + ".attention.head_count", 4);
    w.add_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
    w.add_u32(arch + ".pooling_type", 4);
    w.add_string_array("tokenizer.ggml.tokens", std::vector<std::string>(100, "x"));
    if (head) w.add_tensor("cls.output.weight", DType::kF32, {2, 64});
    const fs::path path = dir / (arch + (head ? "-head" : "") + ".gguf");
    w.begin(path.string());
    if (head) {
      const std::vector<float> zeros(2 * 64);
      w.write_data(zeros.data(), zeros.size() * sizeof(float));
    }
    w.finish();
    return config_from_gguf(*GgufFile::open(path.string()));
  };
  const ModelConfig rank = write("qwen3", true);
  EXPECT_EQ(rank.pooling, Pooling::kRank);
  EXPECT_EQ(rank.n_cls_out, 2);
  EXPECT_NO_THROW(rank.validate("rank"));
  try {
    write("qwen3", false);
    ADD_FAILURE() << "a rank file without its head was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFormat);
    EXPECT_NE(std::string(e.what()).find("cls.output.weight"), std::string::npos) << e.what();
  }
  EXPECT_EQ(write("qwen2", true).pooling, Pooling::kNone);
}

TEST(ConfigGguf, MissingAndMistypedKeys) {
  fs::path dir = make_temp_dir("cfg");
  RawGguf g;
  g.kv = {{"general.architecture", kv_str("llama")}, {"llama.block_count", kv_str("two")}};
  write_file(dir / "a.gguf", g.bytes());
  try {
    config_from_gguf(*GgufFile::open((dir / "a.gguf").string()));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFormat);
    EXPECT_NE(std::string(e.what()).find("llama.block_count"), std::string::npos);
  }
  g.kv = {{"general.architecture", kv_str("llama")}, {"llama.block_count", kv_u32(2)}};
  write_file(dir / "b.gguf", g.bytes());
  try {
    config_from_gguf(*GgufFile::open((dir / "b.gguf").string()));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("llama.embedding_length"), std::string::npos);
  }
}

}  // namespace
}  // namespace anelm::engine
