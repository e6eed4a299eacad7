// Model presets: parsing errors name file and key, selection by model path, and request defaults.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/error.h"
#include "server/api_request.h"
#include "server/model_preset.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

namespace fs = std::filesystem;

TEST(ModelPreset, ShippedPresetsParseAndSelectQwen25) {
  const std::string dir = (fs::path(ANELM_SOURCE_DIR) / "configs" / "models").string();
  ModelPreset p = find_model_preset(dir, "/home/u/.cache/huggingface/hub/models--Qwen--Qwen2.5-0.5B-Instruct/snapshots/abc");
  EXPECT_EQ(p.name, "qwen2.5-instruct");
  EXPECT_FLOAT_EQ(p.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(p.sampling.top_p, 0.8f);
  EXPECT_EQ(p.sampling.top_k, 20);
  EXPECT_EQ(find_model_preset(dir, "/models/stories260K.gguf").name, "");
  EXPECT_EQ(find_model_preset("/nonexistent", "qwen2.5-0.5b-instruct").name, "");
}

TEST(ModelPreset, ErrorsNameTheFileAndKey) {
  auto message = [](const std::string& text) {
    try {
      parse_model_preset(text, "p.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("[1]").find("p.json: not a JSON object"), std::string::npos);
  EXPECT_NE(message(R"({"name":"x","match":["a"],"colour":1})").find("unknown key 'colour'"), std::string::npos);
  EXPECT_NE(message(R"({"match":["a"]})").find("'name' is required"), std::string::npos);
  EXPECT_NE(message(R"({"name":"x","match":[]})").find("'match'"), std::string::npos);
  EXPECT_NE(message(R"({"name":"x","match":["a"],"sampling":{"top_p":3}})").find("sampling.top_p"),
            std::string::npos);
  EXPECT_NE(message(R"({"name":"x","match":["a"],"sampling":{"temp":1}})").find("sampling.temp"),
            std::string::npos);
}

TEST(ModelPreset, RequestFieldsOverridePresetDefaults) {
  ModelPreset p = parse_model_preset(
      R"({"name":"x","match":["a"],"sampling":{"temperature":0.7,"top_k":20,"repetition_penalty":1.05}})", "p.json");
  auto omitted = parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}]})", p.sampling);
  EXPECT_FLOAT_EQ(omitted.gen.sampling.temperature, 0.7f);
  EXPECT_EQ(omitted.gen.sampling.top_k, 20);
  EXPECT_FLOAT_EQ(omitted.gen.sampling.repetition_penalty, 1.05f);
  auto given = parse_completion_request(R"({"prompt":"hi","temperature":0,"top_k":3})", p.sampling);
  EXPECT_FLOAT_EQ(given.gen.sampling.temperature, 0.0f);
  EXPECT_EQ(given.gen.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(given.gen.sampling.repetition_penalty, 1.05f);
  auto plain = parse_completion_request(R"({"prompt":"hi"})");
  EXPECT_FLOAT_EQ(plain.gen.sampling.temperature, 1.0f);  // OpenAI's default without a preset
}

}  // namespace
}  // namespace anelm::server
