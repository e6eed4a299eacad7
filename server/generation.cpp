// Drives one generation from the HTTP side: admission, event collection, text assembly, output.
#include "server/generation.h"

#include <algorithm>
#include <chrono>

#include "server/api_error.h"
#include "server/sse.h"

namespace anelm::server {

using Clock = std::chrono::steady_clock;

// ---- text -------------------------------------------------------------------------------------

TextAssembler::TextAssembler(const tok::Tokenizer& tokenizer, const std::vector<int>& context,
                             std::vector<std::string> stops, std::unique_ptr<OutputParser> calls,
                             std::vector<int> keep, LineLimits limits)
    : decoder_(tokenizer, context, /*skip_special=*/true, std::move(keep)),
      stop_(std::move(stops)),
      calls_(std::move(calls)),
      limits_(limits) {}

std::string TextAssembler::push(int id) {
  if (stopped()) return {};
  if (first_token_ == Clock::time_point{}) first_token_ = Clock::now();
  return apply_limits(match_stops(decoder_.push(id)));
}

std::string TextAssembler::finish() {
  if (stopped()) return {};
  std::string out = apply_limits(match_stops(decoder_.flush()) + stop_.flush());
  if (!limited_) out += indent_;  // a last line of indentation only
  indent_.clear();
  return out;
}

// n_indent holds a new line's indentation back until its first other character decides; the time
// limit is checked at each newline. Both as llama.cpp's server (see LineLimits).
std::string TextAssembler::apply_limits(std::string text) {
  if (!limits_.any() || limited_) return text;
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (at_line_start_) {
      if (c == ' ' || c == '\t') {
        indent_ += c;
        continue;
      }
      at_line_start_ = false;
      out += indent_;
      const bool shallow = static_cast<int>(indent_.size()) < limits_.n_indent;
      indent_.clear();
      if (shallow) {
        limited_ = true;
        return out;
      }
    }
    out += c;
    if (c != '\n') continue;
    at_line_start_ = limits_.n_indent > 0;
    if (limits_.t_max_predict_ms > 0 &&
        Clock::now() - first_token_ > std::chrono::milliseconds(limits_.t_max_predict_ms)) {
      limited_ = true;
      return out;
    }
  }
  return out;
}

// Stop strings over the runs of text outside tool calls; the runs inside pass unmatched. A byte
// belongs to a call once the tracking parser, having read it, is inside one (so the opening marker's
// last byte is the first inside: a stop string matching an earlier part of the marker still ends
// the output before it).
std::string TextAssembler::match_stops(std::string_view text) {
  if (!calls_) return stop_.push(text);
  std::string out;
  OutputDelta scratch;
  size_t run = 0;
  auto flush_run = [&](size_t end) {
    const std::string_view part = text.substr(run, end - run);
    out += in_call_ ? stop_.pass(part) : stop_.push(part);
    run = end;
  };
  for (size_t i = 0; i < text.size() && !stop_.stopped(); ++i) {
    calls_->feed(text.substr(i, 1), scratch);
    scratch = {};
    const bool in = calls_->in_tool_call();
    if (in == in_call_) continue;
    flush_run(i);
    in_call_ = in;
  }
  if (!stop_.stopped()) flush_run(text.size());
  return out;
}

const char* openai_finish_reason(engine::FinishReason r, bool stopped, bool tool_calls) {
  if (!stopped && r != engine::FinishReason::kStop) return "length";
  return tool_calls ? "tool_calls" : "stop";
}

namespace {

// Choice i's prompt and echo (several-prompt completions: prompt i / n, see PreparedGeneration).
int choice_count(const PreparedGeneration& g) {
  return g.prompts.empty() ? g.n : static_cast<int>(g.prompts.size()) * g.n;
}
const std::vector<int>& choice_prompt(const PreparedGeneration& g, int i) {
  return g.prompts.empty() ? g.request.prompt : g.prompts[static_cast<size_t>(i / g.n)];
}
const std::string& choice_echo(const PreparedGeneration& g, int i) {
  return g.echo_texts.empty() ? g.echo_text : g.echo_texts[static_cast<size_t>(i / g.n)];
}

// The output state of one choice, shared by the streaming and the non-streaming paths.
struct ChoiceState {
  ChoiceState(const tok::Tokenizer& t, const PreparedGeneration& g, int index)
      : tok(t), text(t, choice_prompt(g, index), g.stop_scope == StopScope::kNowhere ? std::vector<std::string>{} : g.stop,
                     g.stop_scope == StopScope::kOutsideToolCalls && g.make_parser && !g.stop.empty()
                         ? g.make_parser() : nullptr, g.keep_special, g.line_limits),
        parser(g.make_parser ? g.make_parser() : make_plain_parser()),
        want_lp(g.request.top_logprobs > 0 || g.want_logprobs), offset(static_cast<int>(choice_echo(g, index).size())),
        arrived(g.arrived) {}

  // The token's text: final once stop strings are handled, then split by the output parser.
  OutputDelta on_token(const engine::TokenStep& step) {
    OutputDelta d;
    if (text.stopped()) return d;
    if (++tokens_used == 1) ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - arrived).count();
    if (want_lp) {
      TokenLogprob lp{tok.token_bytes(step.id), step.logprob, {}, offset, step.id, {}};
      for (const auto& [id, p] : step.top) {
        lp.top.emplace_back(tok.token_bytes(id), p);
        lp.top_ids.push_back(id);
      }
      lps.push_back(std::move(lp));
    }
    const std::string piece = text.push(step.id);
    offset += static_cast<int>(piece.size());
    parser->feed(piece, d);
    return d;
  }
  // `r`: how the engine ended; a cut output (token limit, stop string) drops unfinished markup.
  OutputDelta finish(const engine::GenerateResult& r) {
    OutputDelta d;
    parser->feed(text.finish(), d);
    parser->finish(d, text.stopped() || r.finish != engine::FinishReason::kStop);
    return d;
  }
  std::span<const TokenLogprob> new_logprobs() {
    std::span<const TokenLogprob> s(lps.data() + lp_sent, lps.size() - lp_sent);
    lp_sent = lps.size();
    return s;
  }
  ChoiceOutput output(const engine::GenerateResult& r) {
    ChoiceOutput o;
    parser->result(o);
    o.limited = text.limited();
    o.finish_reason = o.limited ? "length" : openai_finish_reason(r.finish, text.stopped(), !o.tool_calls.empty());
    if (text.stopped()) o.stop_sequence = text.matched_stop();
    o.logprobs = std::move(lps);
    o.stats = {r.prompt_tokens, r.cached_tokens, completion_tokens(r), r.prefill_ms, r.decode_ms};
    o.token_ids.assign(r.ids.begin(), r.ids.begin() + std::min<std::ptrdiff_t>(o.stats.completion_tokens, std::ssize(r.ids)));
    return o;
  }
  int completion_tokens(const engine::GenerateResult& r) const {
    return text.stopped() ? tokens_used : static_cast<int>(r.ids.size());
  }

  const tok::Tokenizer& tok;
  TextAssembler text;
  std::unique_ptr<OutputParser> parser;
  bool want_lp;
  int offset;
  int tokens_used = 0;
  std::vector<TokenLogprob> lps;
  size_t lp_sent = 0;
  Clock::time_point arrived;
  double ttft_ms = -1;
  bool counted = false;  // its result is in the usage (a stream cut after that adds nothing)
};

// Usage over all choices: the prompt counted once (as OpenAI), completions summed; and what the
// request's log line reports.
struct UsageSum {
  UsageInfo u;
  std::string finish;
  double ttft_ms = -1;
  void add(const engine::GenerateResult& r, int completion_tokens, bool first, const std::string& reason,
           double choice_ttft_ms) {
    finish += (finish.empty() ? "" : ",") + reason;
    if (first && ttft_ms < 0) ttft_ms = choice_ttft_ms;
    if (first) {  // the first choice of a prompt: several prompts add up
      u.prompt_tokens += r.prompt_tokens;
      u.cached_tokens += r.cached_tokens;
      u.prompt_ms += r.prefill_ms;
    }
    u.completion_tokens += completion_tokens;
    u.predicted_ms += r.decode_ms;
  }
  // A choice cut short (client gone, stream error): no result came, so the log line shows what it had
  // reached: its prompt and the tokens streamed so far.
  void add_cut(int prompt_tokens, const ChoiceState& st, bool first) {
    if (first && ttft_ms < 0) ttft_ms = st.ttft_ms;
    if (first) u.prompt_tokens += prompt_tokens;
    u.completion_tokens += st.tokens_used;
  }
};

void fill_log(ServerContext& ctx, const PreparedGeneration& gen, const UsageSum& s) {
  if (s.ttft_ms >= 0) ctx.metrics().time_to_first_token.observe(s.ttft_ms / 1000.0);
  if (!gen.log) return;
  RequestLog& l = *gen.log;
  l.prompt_tokens = s.u.prompt_tokens;
  l.cached_tokens = s.u.cached_tokens;
  l.completion_tokens = s.u.completion_tokens;
  l.ttft_ms = s.ttft_ms;
  l.decode_tok_s = s.u.predicted_ms > 0 ? s.u.completion_tokens * 1000.0 / s.u.predicted_ms : 0.0;
  l.finish = s.finish;
}

ApiError event_error(const GenerationEvent& ev) {
  return to_api_error(std::make_exception_ptr(Error(ev.error_kind, ev.error)));
}

bool cancelled_by_server(const engine::GenerateResult& r, const ChoiceState& st) {
  return !st.text.stopped() && (r.finish == engine::FinishReason::kCancelled ||
                                r.finish == engine::FinishReason::kAborted);
}

// One job per choice, all admitted or none (a refused choice cancels the ones already queued).
std::vector<std::shared_ptr<EventChannel>> submit(ServerContext& ctx, const PreparedGeneration& gen) {
  std::vector<std::shared_ptr<EventChannel>> channels;
  for (int i = 0; i < choice_count(gen); ++i) {
    engine::GenerateRequest req = gen.request;
    if (!gen.prompts.empty()) req.prompt = choice_prompt(gen, i);
    req.sampling.seed += static_cast<uint64_t>(i);
    if (gen.make_constraint) req.constraint = gen.make_constraint();
    auto ch = std::make_shared<EventChannel>();
    const EngineWorker::Admit admit = ctx.worker().try_submit(Job{std::move(req), ch});
    if (admit == EngineWorker::Admit::kAccepted) {
      channels.push_back(std::move(ch));
      continue;
    }
    for (auto& c : channels) c->cancel();
    if (admit == EngineWorker::Admit::kQueueFull) {
      ctx.metrics().queue_rejections++;
      throw queue_full(ctx.options().retry_after_s);
    }
    throw unavailable("the server is shutting down", ctx.options().retry_after_s);
  }
  return channels;
}

void cancel_all(const std::vector<std::shared_ptr<EventChannel>>& channels) {
  for (const auto& c : channels) c->cancel();
}

// ---- non-streaming ----------------------------------------------------------------------------

ChoiceOutput collect_choice(ServerContext& ctx, const PreparedGeneration& gen, EventChannel& ch,
                            const std::vector<std::shared_ptr<EventChannel>>& all, UsageSum& usage, int index) {
  ChoiceState st(ctx.tokenizer(), gen, index);
  const bool first = index % gen.n == 0;
  const std::string& echo = choice_echo(gen, index);
  std::vector<GenerationEvent> evs;
  auto last_check = std::chrono::steady_clock::now();
  for (;;) {
    evs.clear();
    ch.wait_pop(evs, std::chrono::milliseconds(50));
    const auto now = std::chrono::steady_clock::now();
    if (gen.client_gone && now - last_check >= std::chrono::milliseconds(50)) {
      last_check = now;
      if (gen.client_gone()) {
        cancel_all(all);  // the client hung up: free the engine within a token
        throw ApiError(499, "invalid_request_error", "the client closed the connection");
      }
    }
    for (const GenerationEvent& ev : evs) {
      if (ev.kind == GenerationEvent::Kind::kToken) {
        st.on_token(ev.step);
        if (st.text.stopped()) ch.stop();  // stop string: free the engine now
        continue;
      }
      if (ev.kind == GenerationEvent::Kind::kError) {
        cancel_all(all);
        throw event_error(ev);
      }
      if (cancelled_by_server(ev.result, st)) {
        cancel_all(all);
        throw unavailable("the request was cancelled: the server is shutting down", ctx.options().retry_after_s);
      }
      st.finish(ev.result);
      ChoiceOutput out = st.output(ev.result);
      usage.add(ev.result, st.completion_tokens(ev.result), first, out.finish_reason, st.ttft_ms);
      out.content = echo + out.content;
      return out;
    }
  }
}

HttpResponse collect(ServerContext& ctx, const PreparedGeneration& gen,
                     const std::vector<std::shared_ptr<EventChannel>>& channels, ResponseSerializer& ser) {
  std::vector<ChoiceOutput> choices;
  UsageSum usage;
  for (size_t i = 0; i < channels.size(); ++i)
    choices.push_back(collect_choice(ctx, gen, *channels[i], channels, usage, static_cast<int>(i)));
  fill_log(ctx, gen, usage);
  HttpResponse res;
  res.body = ser.body(choices, usage.u);
  return res;
}

// ---- streaming --------------------------------------------------------------------------------

struct StreamJob {
  PreparedGeneration gen;
  std::vector<std::shared_ptr<EventChannel>> channels;
  std::unique_ptr<ResponseSerializer> ser;
  int ping_s = 15;
};

// Streams choice `index` to its end. Returns false when the stream is over (client gone, or an
// error was sent), true when the next choice may follow.
bool stream_choice(StreamJob& job, int index, ChoiceState& st, UsageSum& usage, StreamSink& sink) {
  EventChannel& ch = *job.channels[static_cast<size_t>(index)];
  auto send = [&](const std::string& frames) { return frames.empty() || sink.write(frames); };
  if (!send(job.ser->choice_start(index))) return false;
  if (const std::string& echo_text = choice_echo(job.gen, index); !echo_text.empty()) {
    OutputDelta echo;
    echo.content = echo_text;
    if (!send(job.ser->delta(index, echo, {}))) return false;
  }
  auto last_write = Clock::now();
  std::vector<GenerationEvent> evs;
  for (;;) {
    evs.clear();
    bool got = ch.wait_pop(evs, std::chrono::milliseconds(50));
    if (!sink.is_writable()) return false;  // the client went away (also during prefill)
    if (!got) {
      if (Clock::now() - last_write > std::chrono::seconds(job.ping_s)) {
        if (const std::string ping = job.ser->keepalive(); !ping.empty() && !sink.write(ping)) return false;
        last_write = Clock::now();
      }
      continue;
    }
    for (const GenerationEvent& ev : evs) {
      if (ev.kind == GenerationEvent::Kind::kError) {
        sink.write(job.ser->stream_error(event_error(ev)));
        return false;
      }
      if (ev.kind == GenerationEvent::Kind::kDone) {
        if (cancelled_by_server(ev.result, st)) {
          sink.write(job.ser->stream_error(unavailable("the request was cancelled: the server is shutting down", 1)));
          return false;
        }
        const OutputDelta rest = st.finish(ev.result);
        if (!rest.empty() && !send(job.ser->delta(index, rest, st.new_logprobs()))) return false;
        const ChoiceOutput out = st.output(ev.result);
        usage.add(ev.result, st.completion_tokens(ev.result), index % job.gen.n == 0, out.finish_reason, st.ttft_ms);
        st.counted = true;
        return send(job.ser->choice_end(index, out));
      }
      const OutputDelta delta = st.on_token(ev.step);
      if (st.text.stopped()) ch.stop();
      if (delta.empty()) continue;
      if (!send(job.ser->delta(index, delta, st.new_logprobs()))) return false;
      last_write = Clock::now();
    }
  }
}

void stream_events(ServerContext& ctx, StreamJob& job, StreamSink& sink) {
  UsageSum usage;
  if (const std::string start = job.ser->stream_start(); !start.empty() && !sink.write(start)) {
    cancel_all(job.channels);
    return;
  }
  for (int i = 0; i < static_cast<int>(job.channels.size()); ++i) {
    ChoiceState st(ctx.tokenizer(), job.gen, i);
    if (!stream_choice(job, i, st, usage, sink)) {
      cancel_all(job.channels);  // client gone or failed: the worker stops these jobs within a token
      if (!st.counted) usage.add_cut(static_cast<int>(choice_prompt(job.gen, i).size()), st, i % job.gen.n == 0);
      fill_log(ctx, job.gen, usage);
      if (job.gen.log) job.gen.log->error = sink.is_writable() ? "stream ended by an error" : "client disconnected";
      return;
    }
  }
  fill_log(ctx, job.gen, usage);
  sink.write(job.ser->stream_end(usage.u));
}

}  // namespace

HttpResponse run_generation(ServerContext& ctx, PreparedGeneration gen,
                            std::unique_ptr<ResponseSerializer> serializer) {
  if (const engine::ModelConfig& c = ctx.model().engine->config(); !c.causal) {
    throw ApiError(501, "not_supported_error",
                   std::string("this model is an embedding model (") + engine::arch_name(c.arch) +
                       ", an encoder): it does not generate text; it serves /v1/embeddings");
  }
  if (gen.request.prompt.empty()) throw invalid_field("prompt", "the prompt is empty after tokenization");
  ctx.model().engine->validate(gen.request);  // before queueing: a bad request costs no engine time
  for (const std::vector<int>& p : gen.prompts) {
    engine::GenerateRequest one = gen.request;
    one.prompt = p;
    ctx.model().engine->validate(one);
  }
  auto channels = submit(ctx, gen);
  if (!gen.stream) {
    HttpResponse res = collect(ctx, gen, channels, *serializer);
    res.headers.insert(res.headers.end(), gen.headers.begin(), gen.headers.end());
    return res;
  }
  HttpResponse res;
  res.headers = gen.headers;
  auto job = std::make_shared<StreamJob>(StreamJob{std::move(gen), std::move(channels), std::move(serializer),
                                                   ctx.options().sse_ping_s});
  res.content_type = job->ser->stream_content_type();
  res.headers.emplace_back("Cache-Control", "no-cache");
  res.stream = [&ctx, job](StreamSink& sink) { stream_events(ctx, *job, sink); };
  return res;
}

}  // namespace anelm::server
