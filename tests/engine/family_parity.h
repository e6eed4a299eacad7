// The checks a Llama-derived family (Granite, SmolLM3) passes against llama.cpp on random tiny files
// made by `anelm make-model` (fixtures by tests/data/engine/make_family_llamacpp_fixture.py), and a
// GGUF copier for the files that show each family difference is load-bearing.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/model_config.h"

namespace anelm::engine {

// tests/data/engine/<name>.
nlohmann::json load_family_fixture(const std::string& name);
std::vector<int> fixture_prompt(const nlohmann::json& fx, const std::string& name);

// `anelm make-model --arch <arch> --shape tiny --dtype <type> --seed <fx seed>`, made once per test binary.
std::string made_tiny(Arch arch, DType type, uint64_t seed);
std::unique_ptr<Engine> load_engine(const std::string& path, Backend backend = Backend::kCpu, int ctx = 4096);
std::vector<int> greedy_ids(Engine& eng, const std::vector<int>& prompt, int n);

// f32 (both engines multiply f32 activations): every prompt's greedy ids equal llama.cpp's, and
// teacher-forced on its path anelm's top id is llama.cpp's and its logit within rel_tol * max(1, |logit|)
// of llama.cpp's (what greedy ids cannot see: a logit scale).
void expect_f32_equal(Engine& eng, const nlohmann::json& fx, float rel_tol);
// f16 and q8_0 (llama.cpp rounds an f16 matmul's activations to f16, both round q8_0's to q8_0
// blocks): the llamacpp_parity rules, in units of this model's logits (divided by logit_scale), and
// over all prompts teacher-forced top-1 agreement at least llama.cpp's own between flash attention
// on and off, less one step (that floor is a single draw of llama.cpp's noise).
void expect_rounded_parity(Engine& eng, const nlohmann::json& fx, const std::string& type, float logit_scale,
                           const std::string& label);

// Copies a GGUF file, its metadata passed through `key`: the name a key is written under, nullopt
// to drop it; `arch` replaces general.architecture when not empty. Tensors are copied verbatim, those
// `keep_tensor` (when given) returns false for left out.
void copy_gguf(const std::string& src, const std::string& dst,
               const std::function<std::optional<std::string>(const std::string&)>& key, const std::string& arch = "",
               const std::function<bool(const std::string&)>& keep_tensor = {});

}  // namespace anelm::engine
