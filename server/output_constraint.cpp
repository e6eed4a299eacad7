// Request fields -> one grammar; the grammar -> a per-choice engine::TokenConstraint.
#include "server/output_constraint.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "chat/xml_call_grammar.h"
#include "server/api_error.h"

namespace anelm::server {

namespace {

using grammar::gbnf_literal;
using json = nlohmann::ordered_json;

struct Markers {
  std::string open, close;
};

Markers think_markers(chat::ReasoningSyntax r) {
  if (r == chat::ReasoningSyntax::kThinkTags) return {"<think>", "</think>"};
  if (r == chat::ReasoningSyntax::kThinkBrackets) return {"[THINK]", "[/THINK]"};
  return {};
}

// Thinking is off for this reply: the prompt closed the block, or the client set enable_thinking
// false (the templates that read it render the closed block; the others are told no thinking).
bool reasoning_off(const ChatShape& chat) {
  if (chat.starts_in_reasoning) return false;
  if (chat.reasoning_closed) return true;
  if (!chat.request) return false;
  auto it = chat.request->template_kwargs.find("enable_thinking");
  return it != chat.request->template_kwargs.end() && it->is_boolean() && !it->get<bool>();
}

// The reasoning block a reasoning model writes before its answer: optional, or (when the prompt
// opened it) required from the first token, or none when thinking is off (else a model that spells
// the open marker from ordinary tokens could reason until max_tokens and never write the forced
// call or JSON). Its text may not contain the close marker's first two bytes ("</" or "[/"), a
// simple way to keep the grammar unambiguous.
std::string add_reasoning_rules(grammar::SchemaConverter& conv, const ChatShape& chat) {
  if (!chat.format || chat.format->reasoning == chat::ReasoningSyntax::kNone || reasoning_off(chat)) return "";
  const Markers m = think_markers(chat.format->reasoning);
  const char c0 = m.close[0];
  const std::string cls = c0 == '<' ? "<" : "\\[";
  conv.add_rule("think-body", "( [^" + cls + "] | \"" + std::string(1, c0) + "\" [^/] )*");
  conv.add_rule("think-ws", "[ \\t\\n]{0,4}");
  const std::string block = "think-body " + gbnf_literal(m.close) + " think-ws";
  conv.add_rule("think", chat.starts_in_reasoning ? block : "( " + gbnf_literal(m.open) + " " + block + " )?");
  return "think ";
}

// tool_choice required / named / auto: the calls in the model's syntax, arguments per the schemas.
// Tool schemas are never strict: a keyword the grammar cannot enforce is dropped and logged (the
// schema still describes the tool to the model; OpenAI's per-function `strict` is not kept by the
// request parser).
std::string add_call_rules(grammar::SchemaConverter& conv, const ChatRequest& r, const chat::ChatFormat& format,
                           bool allow_response) {
  const chat::ToolCallShape shape = chat::tool_call_shape(format);
  const std::string only = r.tool_choice.kind == ToolChoice::Kind::kFunction ? r.tool_choice.name : "";
  const bool parallel = r.parallel_tool_calls && shape.supports_parallel && only.empty();
  grammar::SchemaOptions relaxed;
  relaxed.strict = false;
  relaxed.where = "tools";
  if (shape.whole_output_json)
    return conv.add_schema("envelope", chat::generic_envelope_schema(r.tools, only, allow_response, parallel), relaxed);
  if (shape.xml_parameters) return chat::add_xml_call_rules(conv, r.tools, only, parallel, relaxed);
  if (shape.name_outside_json) {
    std::string alts;
    const std::vector<std::string> names = tool_names(r.tools);
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string& name = names[i];
      if (!only.empty() && name != only) continue;
      relaxed.where = "tools[" + std::to_string(i) + "].function.parameters";
      const std::string args = conv.add_schema(name + "-args", chat::tool_arguments_schema(r.tools, name), relaxed);
      alts += (alts.empty() ? "" : " | ") + gbnf_literal(name) + " " + gbnf_literal(shape.name_suffix) + " " + args;
    }
    conv.add_rule("call", gbnf_literal(shape.prefix) + " ( " + alts + " )" +
                              (shape.suffix.empty() ? "" : " " + gbnf_literal(shape.suffix)));
    return parallel ? "call+" : "call";
  }
  const std::string payload = conv.add_schema("payload", chat::tool_call_payload_schema(format.tools, r.tools, only), relaxed);
  const std::string sep = shape.separator.empty() ? "" : gbnf_literal(shape.separator) + " ";
  const std::string pre = shape.prefix.empty() ? "" : gbnf_literal(shape.prefix) + " ";
  const std::string post = shape.suffix.empty() ? "" : " " + gbnf_literal(shape.suffix);
  if (shape.parallel_in_one_json) {
    conv.add_rule("calls", pre + payload + (parallel ? " ( " + sep + payload + " )*" : "") + post);
  } else {
    conv.add_rule("call", pre + payload + post);
    conv.add_rule("calls", parallel ? "call ( " + sep + "call )*" : "call");
  }
  return "calls";
}

std::shared_ptr<const grammar::Grammar> compile(const std::string& gbnf, const char* param, size_t max_bytes,
                                                grammar::CompileBudget& budget) {
  try {
    return grammar::parse_gbnf(gbnf, "root", grammar::GbnfOptions{max_bytes, &budget});
  } catch (const grammar::Cancelled&) {
    throw;
  } catch (const grammar::Error& e) {
    throw invalid_field(param, std::string(param) + ": " + e.what());
  }
}

OutputConstraintSpec compile_spec(const GenerationFields& f, const ChatShape& chat, grammar::CompileBudget& budget) {
  OutputConstraintSpec spec;
  const bool json_format = f.response_format.kind != ResponseFormat::Kind::kText;
  const ChatRequest* r = chat.request;
  const bool tools = r && !r->tools.empty() && r->tool_choice.kind != ToolChoice::Kind::kNone;
  if (!f.grammar.empty()) {
    spec.gbnf = f.grammar;
    spec.grammar = compile(spec.gbnf, "grammar", grammar::kMaxGrammarBytes, budget);
    return spec;
  }
  grammar::SchemaConverter conv;
  conv.set_budget(&budget);
  const char* param = "response_format";
  try {
    std::string body;
    if (json_format) {
      grammar::SchemaOptions opt;
      opt.strict = f.response_format.strict;
      opt.where = "response_format.json_schema.schema";
      body = f.response_format.kind == ResponseFormat::Kind::kJsonObject
                 ? conv.add_schema("json-object", json{{"type", "object"}})
                 : conv.add_schema("response", f.response_format.schema, opt);
    }
    if (tools) {
      param = "tools";
      if (!chat.format || chat.format->tools == chat::ToolSyntax::kNone)
        throw invalid_field("tools", "this model's chat template has no tool-call syntax (its template does not read `tools`)");
      const bool forced = r->tool_choice.kind != ToolChoice::Kind::kAuto;
      const chat::ToolCallShape shape = chat::tool_call_shape(*chat.format);
      const std::string calls = add_call_rules(conv, *r, *chat.format, !forced && !json_format);
      if (forced || shape.whole_output_json) {
        body = calls;
      } else if (json_format) {
        body = "( " + calls + " | " + body + " )";  // auto with a response format: a call or the JSON answer
      } else {
        // auto: free text until the model opens a call, then the call's grammar.
        conv.add_rule("root", calls);
        spec.trigger = shape.trigger;
        spec.trigger_at_start = shape.trigger_at_start;
        spec.relaxed = conv.relaxed();
        spec.gbnf = conv.gbnf();
        spec.grammar = compile(spec.gbnf, "tools", grammar::kMaxSchemaGrammarBytes, budget);
        return spec;
      }
    }
    conv.add_rule("root", add_reasoning_rules(conv, chat) + body);
  } catch (const grammar::Cancelled&) {
    throw;
  } catch (const grammar::SchemaError& e) {
    throw invalid_field(param, e.what());
  } catch (const grammar::Error& e) {  // a size limit while converting
    throw invalid_field(param, std::string(param) + ": " + e.what());
  } catch (const std::invalid_argument& e) {  // chat's schema helpers: unknown tool name
    throw invalid_field(r && r->tool_choice.kind == ToolChoice::Kind::kFunction ? "tool_choice" : "tools", e.what());
  }
  spec.relaxed = conv.relaxed();
  spec.gbnf = conv.gbnf();
  spec.grammar = compile(spec.gbnf, param, grammar::kMaxSchemaGrammarBytes, budget);
  return spec;
}

// Everything a compiled spec depends on, as one string: equal keys give equal specs.
std::string cache_key(const GenerationFields& f, const ChatShape& chat) {
  std::string k;
  const ChatRequest* r = chat.request;
  const bool tools = r && !r->tools.empty() && r->tool_choice.kind != ToolChoice::Kind::kNone;
  auto add = [&k](std::string_view part) {
    k += std::to_string(part.size());
    k += ':';
    k.append(part);
  };
  add(f.grammar);
  add(std::to_string(static_cast<int>(f.response_format.kind)) + (f.response_format.strict ? "s" : "n"));
  if (f.response_format.kind == ResponseFormat::Kind::kJsonSchema) add(f.response_format.schema.dump());
  if (chat.format) {
    add(std::to_string(static_cast<int>(chat.format->tools)) + "," + std::to_string(static_cast<int>(chat.format->reasoning)) +
        "," + std::to_string(static_cast<int>(chat.format->mistral_form)) + "," +
        std::to_string(chat.format->template_accepts_tools) + "," + std::to_string(chat.starts_in_reasoning) + "," +
        std::to_string(reasoning_off(chat)));
  }
  if (tools) {
    add(std::to_string(static_cast<int>(r->tool_choice.kind)) + r->tool_choice.name + (r->parallel_tool_calls ? "p" : "s"));
    add(r->tools.dump());
  }
  return k;
}

// A bounded LRU of compiled specs. Specs are immutable once built (grammars are shared read-only).
class SpecCache {
 public:
  std::optional<OutputConstraintSpec> get(const std::string& key) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) {
      ++misses_;
      return std::nullopt;
    }
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  void put(const std::string& key, const OutputConstraintSpec& spec) {
    if (key.size() > kConstraintCacheKeyBytes / 4) return;  // one huge request may not evict everything
    std::lock_guard<std::mutex> lk(mu_);
    if (index_.count(key)) return;
    lru_.emplace_front(key, spec);
    index_.emplace(lru_.front().first, lru_.begin());
    bytes_ += key.size() + spec.gbnf.size();
    while (!lru_.empty() && (lru_.size() > kConstraintCacheEntries || bytes_ > kConstraintCacheKeyBytes)) {
      auto& last = lru_.back();
      bytes_ -= last.first.size() + last.second.gbnf.size();
      index_.erase(std::string_view(last.first));
      lru_.pop_back();
    }
  }
  ConstraintCacheStats stats() {
    std::lock_guard<std::mutex> lk(mu_);
    return {hits_, misses_, lru_.size()};
  }
  void clear() {
    std::lock_guard<std::mutex> lk(mu_);
    index_.clear();
    lru_.clear();
    bytes_ = hits_ = misses_ = 0;
  }

 private:
  using Entry = std::pair<std::string, OutputConstraintSpec>;
  std::mutex mu_;
  std::list<Entry> lru_;
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // views into lru_ keys
  size_t bytes_ = 0, hits_ = 0, misses_ = 0;
};

SpecCache& spec_cache() {
  static SpecCache c;
  return c;
}

}  // namespace

bool prompt_closes_reasoning(std::string_view prompt, const chat::ChatFormat& format) {
  const Markers m = think_markers(format.reasoning);
  if (m.close.empty()) return false;
  while (!prompt.empty() && (prompt.back() == ' ' || prompt.back() == '\t' || prompt.back() == '\n' || prompt.back() == '\r'))
    prompt.remove_suffix(1);
  return prompt.size() >= m.close.size() && prompt.substr(prompt.size() - m.close.size()) == m.close;
}

ConstraintCacheStats constraint_cache_stats() { return spec_cache().stats(); }
void clear_constraint_cache() { spec_cache().clear(); }

OutputConstraintSpec output_constraint_for(const GenerationFields& f, const ChatShape& chat,
                                           const std::function<bool()>& cancelled) {
  const bool json_format = f.response_format.kind != ResponseFormat::Kind::kText;
  const ChatRequest* r = chat.request;
  const bool tools = r && !r->tools.empty() && r->tool_choice.kind != ToolChoice::Kind::kNone;
  if (!f.grammar.empty()) {
    if (json_format) throw invalid_field("grammar", "grammar and response_format cannot be used together");
    if (tools) throw invalid_field("grammar", "grammar and tools cannot be used together (set tool_choice to none)");
  }
  if (f.grammar.empty() && !json_format && !tools) return {};
  const std::string key = cache_key(f, chat);
  if (auto hit = spec_cache().get(key)) {
    if (!hit->relaxed.empty()) spdlog::debug("output constraint (cached): {} schema keyword(s) relaxed", hit->relaxed.size());
    return *hit;
  }
  grammar::CompileBudget budget(cancelled, std::chrono::milliseconds(kConstraintCompileMs));
  OutputConstraintSpec spec;
  try {
    spec = compile_spec(f, chat, budget);
  } catch (const grammar::Cancelled& e) {
    throw ApiError(400, "invalid_request_error", e.what(), "", "cancelled");
  }
  for (const std::string& note : spec.relaxed) spdlog::info("output constraint relaxed (not enforced): {}", note);
  spec_cache().put(key, spec);
  return spec;
}

std::shared_ptr<const ConstraintVocab> ConstraintVocab::build(const tok::Tokenizer& tk, const std::vector<int>& preserved) {
  const int n = tk.vocab_size();
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<bool> usable(static_cast<size_t>(n));
  std::vector<int> eog;
  for (int id = 0; id < n; ++id) {
    if (tk.is_eog(id)) eog.push_back(id);
    if (tk.is_special(id) && std::find(preserved.begin(), preserved.end(), id) == preserved.end()) continue;
    bytes[static_cast<size_t>(id)] = tk.token_bytes(id);
    usable[static_cast<size_t>(id)] = !bytes[static_cast<size_t>(id)].empty();
  }
  auto v = std::make_shared<ConstraintVocab>();
  v->grammar = std::make_shared<const grammar::Vocab>(std::move(bytes), std::move(usable), std::move(eog));
  return v;
}

namespace {

// One choice's grammar state. allows() is the fast path; mask() runs only when the sampled token
// was refused. Lazy specs watch the free text for the trigger (outside reasoning) and start the
// grammar at the trigger's first byte.
class GrammarConstraint final : public engine::TokenConstraint {
 public:
  GrammarConstraint(const OutputConstraintSpec& spec, std::shared_ptr<const ConstraintVocab> vocab,
                    Markers reasoning, bool in_reasoning)
      : vocab_(std::move(vocab)),
        matcher_(spec.grammar, vocab_->grammar),
        trigger_(spec.trigger),
        trigger_at_start_(spec.trigger_at_start),
        active_(spec.trigger.empty()),
        reasoning_(std::move(reasoning)),
        in_reasoning_(in_reasoning),
        started_(reasoning_.open.empty() || in_reasoning),
        allowed_(static_cast<size_t>(vocab_->grammar->size())) {}

  bool allows(int id) override { return !active_ || matcher_.allows(id); }

  int mask(std::span<float> logits) override {
    if (!active_) return static_cast<int>(logits.size());
    const int n = std::min<int>(static_cast<int>(logits.size()), static_cast<int>(allowed_.size()));
    const int count = matcher_.fill_mask(std::span<uint8_t>(allowed_.data(), static_cast<size_t>(n)));
    for (int i = 0; i < n; ++i)
      if (!allowed_[static_cast<size_t>(i)]) logits[static_cast<size_t>(i)] = -INFINITY;
    for (size_t i = static_cast<size_t>(n); i < logits.size(); ++i) logits[i] = -INFINITY;
    return count;
  }

  void accept(int id) override {
    if (active_) {
      matcher_.accept_token(id);
      return;
    }
    if (id < 0 || id >= vocab_->grammar->size()) return;
    watch(vocab_->grammar->token_bytes(id));
  }

 private:
  // Free text so far (bounded: what a marker may still need) -> activates on the trigger.
  void watch(const std::string& bytes) {
    if (trigger_.empty()) return;  // no call can start any more
    seen_ += bytes;
    if (trigger_at_start_) {
      const size_t first = seen_.find_first_not_of(" \t\n");
      if (first == std::string::npos) return;
      if (seen_.compare(first, trigger_.size(), trigger_) == 0 || seen_.size() - first < trigger_.size()) {
        if (seen_.size() - first >= trigger_.size()) activate(first);
        return;
      }
      trigger_.clear();  // the reply began with something else: no call can start any more
      seen_.clear();
      return;
    }
    for (;;) {
      if (in_reasoning_) {
        const size_t close = reasoning_.close.empty() ? std::string::npos : seen_.find(reasoning_.close);
        if (close == std::string::npos) break;
        in_reasoning_ = false;
        seen_.erase(0, close + reasoning_.close.size());
        continue;
      }
      if (!reasoning_.open.empty() && !started_) {
        const size_t first = seen_.find_first_not_of(" \t\n");
        if (first != std::string::npos && seen_.compare(first, reasoning_.open.size(), reasoning_.open) == 0) {
          in_reasoning_ = true;
          started_ = true;
          seen_.erase(0, first + reasoning_.open.size());
          continue;
        }
        if (first != std::string::npos && seen_.size() - first >= reasoning_.open.size()) started_ = true;
      }
      const size_t at = trigger_.empty() ? std::string::npos : seen_.find(trigger_);
      if (at != std::string::npos) {
        activate(at);
        return;
      }
      break;
    }
    const size_t keep = std::max(trigger_.size(), std::max(reasoning_.open.size(), reasoning_.close.size())) + 8;
    if (seen_.size() > keep && started_) seen_.erase(0, seen_.size() - keep);
  }

  void activate(size_t at) {
    active_ = true;
    // The grammar starts with the trigger; a token that also carried text after it feeds that too.
    if (!matcher_.accept_bytes(std::string_view(seen_).substr(at))) active_ = false, trigger_.clear();
    seen_.clear();
  }

  std::shared_ptr<const ConstraintVocab> vocab_;
  grammar::Matcher matcher_;
  std::string trigger_;
  bool trigger_at_start_;
  bool active_;
  Markers reasoning_;
  bool in_reasoning_;
  bool started_;  // past the point where the reply could still open a reasoning block
  std::string seen_;
  std::vector<uint8_t> allowed_;  // mask scratch, sized once per choice
};

}  // namespace

std::function<std::shared_ptr<engine::TokenConstraint>()> constraint_factory(
    const OutputConstraintSpec& spec, std::shared_ptr<const ConstraintVocab> vocab,
    const chat::ChatFormat* format, bool starts_in_reasoning) {
  if (!spec.grammar) return {};
  const Markers reasoning = format ? think_markers(format->reasoning) : Markers{};
  return [spec, vocab = std::move(vocab), reasoning, starts_in_reasoning]() -> std::shared_ptr<engine::TokenConstraint> {
    return std::make_shared<GrammarConstraint>(spec, vocab, reasoning, starts_in_reasoning && !reasoning.close.empty());
  };
}

}  // namespace anelm::server
