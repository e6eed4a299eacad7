// `anelm generate`: runs one prompt through the engine and prints the continuation (or JSON with --json).
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <optional>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "tools/cli_commands.h"
#include "tools/cli_util.h"
#include "server/model_bundle.h"
#include "tokenizer/stream_decoder.h"

namespace anelm::tools {

using namespace engine;
using namespace server;

namespace {

// A raw prompt is tokenized as llama.cpp does: the model's BOS rule, special tokens parsed.
std::vector<int> prompt_ids_for(const tok::Tokenizer& tokenizer, const std::string& text) {
  std::vector<int> ids;
  const auto& v = tokenizer.vocab();
  if (v.add_bos && v.bos_id >= 0) ids.push_back(v.bos_id);
  auto body = tokenizer.encode(text, /*parse_special=*/true);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

engine::SamplingParams sampling_from(const cxxopts::ParseResult& r) {
  engine::SamplingParams s;
  s.temperature = r["temperature"].as<float>();
  s.top_k = r["top-k"].as<int>();
  s.top_p = r["top-p"].as<float>();
  s.min_p = r["min-p"].as<float>();
  s.repetition_penalty = r["repeat-penalty"].as<float>();
  s.seed = r["seed"].as<uint64_t>();
  if (s.top_k < 0) throw Error(ErrorKind::kInvalidArgument, "--top-k must be >= 0");
  if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) throw Error(ErrorKind::kInvalidArgument, "--top-p must be in (0, 1]");
  if (!(s.min_p >= 0.0f && s.min_p <= 1.0f)) throw Error(ErrorKind::kInvalidArgument, "--min-p must be in [0, 1]");
  if (!(s.repetition_penalty > 0.0f)) throw Error(ErrorKind::kInvalidArgument, "--repeat-penalty must be > 0");
  return s;
}

// Teacher forcing for parity checks against another engine: one forward over prompt + teacher
// (all logits), and per step i the top-k raw logits after prompt + teacher[0..i). Raw logits, not
// logprobs, because those are what llama.cpp's llamacpp-logits prints.
nlohmann::json teacher_forced(engine::Engine& eng, const std::vector<int>& prompt, const std::vector<int>& teacher,
                              int k) {
  std::vector<int> seq = prompt;
  seq.insert(seq.end(), teacher.begin(), teacher.end() - 1);  // the last id's successor is not asked for
  const auto logits = eng.forward(seq, 0, /*all_logits=*/true);
  const size_t vocab = logits.size() / seq.size();
  std::vector<int> order(vocab);
  nlohmann::json steps = nlohmann::json::array();
  for (size_t i = 0; i < teacher.size(); ++i) {
    const float* row = logits.data() + (prompt.size() - 1 + i) * vocab;
    std::iota(order.begin(), order.end(), 0);
    const size_t n = std::min<size_t>(k, vocab);
    // Ties to the lower id, as greedy sampling breaks them.
    std::partial_sort(order.begin(), order.begin() + n, order.end(),
                      [row](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    nlohmann::json top = nlohmann::json::array();
    for (size_t j = 0; j < n; ++j) top.push_back({{"id", order[j]}, {"logit", row[order[j]]}});
    steps.push_back({{"forced_id", teacher[i]}, {"top", top}});
  }
  return steps;
}

}  // namespace

int run_generate(int argc, char** argv) {
  cxxopts::Options options("anelm generate", "Generate a continuation of a prompt");
  add_engine_flags(options);
  options.add_options("generation")
      ("prompt", "prompt text (model's BOS rule, special tokens parsed)", cxxopts::value<std::string>())
      ("prompt-ids", "prompt token ids: \"1 2 3\"", cxxopts::value<std::string>())
      ("max-tokens", "tokens to generate at most (-1: until a stop or the end of the context)",
       cxxopts::value<int>()->default_value("128"))
      ("temperature", "0: greedy", cxxopts::value<float>()->default_value("0.8"))
      ("top-k", "0: off", cxxopts::value<int>()->default_value("40"))
      ("top-p", "1: off", cxxopts::value<float>()->default_value("0.95"))
      ("min-p", "0: off", cxxopts::value<float>()->default_value("0.05"))
      ("repeat-penalty", "1: off", cxxopts::value<float>()->default_value("1.0"))
      ("seed", "sampling seed", cxxopts::value<uint64_t>()->default_value("0"))
      ("ignore-eos", "do not stop at end-of-generation tokens")
      ("json", "print one JSON object instead of streaming text")
      ("teacher-ids", "with --json: also print `teacher_forced`, per step the top logits after the prompt "
       "plus these ids (one forward, not sampled)", cxxopts::value<std::string>())
      ("logits-top", "logits per teacher-forced step", cxxopts::value<int>()->default_value("5"));
  auto r = parse_cli(options, argc, argv);
  if (!r) return 0;
  if (r->count("prompt") == r->count("prompt-ids"))
    throw Error(ErrorKind::kInvalidArgument, "give exactly one of --prompt and --prompt-ids");

  ModelBundle bundle = load_model_bundle(engine_options_from(*r));
  engine::GenerateRequest req;
  req.prompt = r->count("prompt") ? prompt_ids_for(*bundle.tokenizer, (*r)["prompt"].as<std::string>())
                                  : parse_id_list((*r)["prompt-ids"].as<std::string>());
  const int max_tokens = (*r)["max-tokens"].as<int>();
  req.max_tokens = max_tokens == -1 ? std::nullopt : std::optional<int>(max_tokens);
  req.sampling = sampling_from(*r);
  req.ignore_eos = r->count("ignore-eos") > 0;

  const bool json = r->count("json") > 0;
  std::vector<int> teacher;
  if (r->count("teacher-ids")) {
    if (!json) throw Error(ErrorKind::kInvalidArgument, "--teacher-ids needs --json");
    teacher = parse_id_list((*r)["teacher-ids"].as<std::string>());
    if (teacher.empty()) throw Error(ErrorKind::kInvalidArgument, "--teacher-ids is empty");
    if ((*r)["logits-top"].as<int>() < 1) throw Error(ErrorKind::kInvalidArgument, "--logits-top must be >= 1");
    engine::GenerateRequest check = req;  // the forced sequence must fit the context like a prompt
    check.prompt.insert(check.prompt.end(), teacher.begin(), teacher.end());
    check.max_tokens = 0;
    bundle.engine->validate(check);
  }
  tok::StreamDecoder stream(*bundle.tokenizer, req.prompt);
  auto result = bundle.engine->generate(req, [&](const engine::TokenStep& step) {
    std::string piece = stream.push(step.id);
    if (!json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  std::string tail = stream.flush();
  if (!json) {
    std::fwrite(tail.data(), 1, tail.size(), stdout);
    std::fputc('\n', stdout);
    std::fprintf(stderr, "[%s] prompt %d tokens at %.1f tok/s, generated %zu at %.1f tok/s\n",
                 engine::finish_reason_name(result.finish), result.prompt_tokens, result.prefill_tok_s,
                 result.ids.size(), result.decode_tok_s);
    return 0;
  }
  nlohmann::json out = {
      {"prompt_ids", req.prompt},         {"ids", result.ids},
      {"text", stream.text()},            {"finish_reason", engine::finish_reason_name(result.finish)},
      {"prefill_tok_s", result.prefill_tok_s}, {"decode_tok_s", result.decode_tok_s},
  };
  if (!teacher.empty())
    out["teacher_forced"] = teacher_forced(*bundle.engine, req.prompt, teacher, (*r)["logits-top"].as<int>());
  std::puts(out.dump().c_str());
  return 0;
}

}  // namespace anelm::tools
