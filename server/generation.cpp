// Drives one generation from the HTTP side: admission, event collection, text assembly, output.
#include "server/generation.h"

#include <chrono>

#include "server/api_error.h"
#include "server/sse.h"

namespace anelm::server {

using Clock = std::chrono::steady_clock;

// ---- text -------------------------------------------------------------------------------------

TextAssembler::TextAssembler(const tok::Tokenizer& tokenizer, const std::vector<int>& context,
                             std::vector<std::string> stops)
    : decoder_(tokenizer, context, /*skip_special=*/true), stop_(std::move(stops)) {}

std::string TextAssembler::push(int id) {
  if (stop_.stopped()) return {};
  return stop_.push(decoder_.push(id));
}

std::string TextAssembler::finish() {
  if (stop_.stopped()) return {};
  std::string out = stop_.push(decoder_.flush());
  return out + stop_.flush();
}

const char* openai_finish_reason(engine::FinishReason r, bool stopped, bool tool_calls) {
  if (tool_calls) return "tool_calls";
  if (stopped) return "stop";
  return r == engine::FinishReason::kStop ? "stop" : "length";
}

namespace {

// The output state of one choice, shared by the streaming and the non-streaming paths.
struct ChoiceState {
  ChoiceState(const tok::Tokenizer& t, const PreparedGeneration& g)
      : tok(t), text(t, g.request.prompt, g.stop), parser(g.make_parser ? g.make_parser() : make_plain_parser()),
        want_lp(g.request.top_logprobs > 0 || g.want_logprobs), offset(static_cast<int>(g.echo_text.size())),
        arrived(g.arrived) {}

  // The token's text: final once stop strings are handled, then split by the output parser.
  OutputDelta on_token(const engine::TokenStep& step) {
    OutputDelta d;
    if (text.stopped()) return d;
    if (++tokens_used == 1) ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - arrived).count();
    if (want_lp) {
      TokenLogprob lp{tok.token_bytes(step.id), step.logprob, {}, offset};
      for (const auto& [id, p] : step.top) lp.top.emplace_back(tok.token_bytes(id), p);
      lps.push_back(std::move(lp));
    }
    const std::string piece = text.push(step.id);
    offset += static_cast<int>(piece.size());
    parser->feed(piece, d);
    return d;
  }
  OutputDelta finish() {
    OutputDelta d;
    parser->feed(text.finish(), d);
    parser->finish(d);
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
    o.finish_reason = openai_finish_reason(r.finish, text.stopped(), !o.tool_calls.empty());
    o.logprobs = std::move(lps);
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
    if (first) ttft_ms = choice_ttft_ms;
    if (first) {
      u.prompt_tokens = r.prompt_tokens;
      u.cached_tokens = r.cached_tokens;
      u.prompt_ms = r.prefill_ms;
    }
    u.completion_tokens += completion_tokens;
    u.predicted_ms += r.decode_ms;
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
  for (int i = 0; i < gen.n; ++i) {
    engine::GenerateRequest req = gen.request;
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
                            const std::vector<std::shared_ptr<EventChannel>>& all, UsageSum& usage, bool first) {
  ChoiceState st(ctx.tokenizer(), gen);
  std::string echo = gen.echo_text;
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
      st.finish();
      ChoiceOutput out = st.output(ev.result);
      usage.add(ev.result, st.completion_tokens(ev.result), first, out.finish_reason, st.ttft_ms);
      out.content = echo + out.content;
      return out;
    }
  }
}

HttpResponse collect(ServerContext& ctx, const PreparedGeneration& gen,
                     const std::vector<std::shared_ptr<EventChannel>>& channels, const ResponseSerializer& ser) {
  std::vector<ChoiceOutput> choices;
  UsageSum usage;
  for (size_t i = 0; i < channels.size(); ++i)
    choices.push_back(collect_choice(ctx, gen, *channels[i], channels, usage, i == 0));
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
bool stream_choice(ServerContext& ctx, StreamJob& job, int index, UsageSum& usage, StreamSink& sink) {
  EventChannel& ch = *job.channels[static_cast<size_t>(index)];
  ChoiceState st(ctx.tokenizer(), job.gen);
  auto send = [&](const std::string& payload) { return sink.write(sse_data(payload)); };
  if (auto first = job.ser->start_chunk(index); first && !send(*first)) return false;
  if (!job.gen.echo_text.empty()) {
    OutputDelta echo;
    echo.content = job.gen.echo_text;
    if (!send(job.ser->delta_chunk(index, echo, {}))) return false;
  }
  auto last_write = Clock::now();
  std::vector<GenerationEvent> evs;
  for (;;) {
    evs.clear();
    bool got = ch.wait_pop(evs, std::chrono::milliseconds(50));
    if (!sink.is_writable()) return false;  // the client went away (also during prefill)
    if (!got) {
      if (Clock::now() - last_write > std::chrono::seconds(job.ping_s)) {
        if (!sink.write(sse_comment("ping"))) return false;
        last_write = Clock::now();
      }
      continue;
    }
    for (const GenerationEvent& ev : evs) {
      if (ev.kind == GenerationEvent::Kind::kError) {
        sink.write(sse_error(event_error(ev)));
        return false;
      }
      if (ev.kind == GenerationEvent::Kind::kDone) {
        if (cancelled_by_server(ev.result, st)) {
          sink.write(sse_error(unavailable("the request was cancelled: the server is shutting down", 1)));
          return false;
        }
        const OutputDelta rest = st.finish();
        if (!rest.empty() && !send(job.ser->delta_chunk(index, rest, st.new_logprobs()))) return false;
        const ChoiceOutput out = st.output(ev.result);
        usage.add(ev.result, st.completion_tokens(ev.result), index == 0, out.finish_reason, st.ttft_ms);
        return send(job.ser->finish_chunk(index, out.finish_reason));
      }
      const OutputDelta delta = st.on_token(ev.step);
      if (st.text.stopped()) ch.stop();
      if (delta.empty()) continue;
      if (!send(job.ser->delta_chunk(index, delta, st.new_logprobs()))) return false;
      last_write = Clock::now();
    }
  }
}

void stream_events(ServerContext& ctx, StreamJob& job, StreamSink& sink) {
  UsageSum usage;
  for (int i = 0; i < static_cast<int>(job.channels.size()); ++i) {
    if (!stream_choice(ctx, job, i, usage, sink)) {
      cancel_all(job.channels);  // client gone or failed: the worker stops these jobs within a token
      fill_log(ctx, job.gen, usage);
      if (job.gen.log) job.gen.log->error = sink.is_writable() ? "stream ended by an error" : "client disconnected";
      return;
    }
  }
  fill_log(ctx, job.gen, usage);
  if (job.gen.include_usage && !sink.write(sse_data(job.ser->usage_chunk(usage.u)))) return;
  sink.write(sse_done());
}

}  // namespace

HttpResponse run_generation(ServerContext& ctx, PreparedGeneration gen,
                            std::unique_ptr<ResponseSerializer> serializer) {
  if (gen.request.prompt.empty()) throw invalid_field("prompt", "the prompt is empty after tokenization");
  ctx.model().engine->validate(gen.request);  // before queueing: a bad request costs no engine time
  auto channels = submit(ctx, gen);
  if (!gen.stream) return collect(ctx, gen, channels, *serializer);
  auto job = std::make_shared<StreamJob>(StreamJob{std::move(gen), std::move(channels), std::move(serializer),
                                                   ctx.options().sse_ping_s});
  HttpResponse res;
  res.content_type = "text/event-stream";
  res.headers.emplace_back("Cache-Control", "no-cache");
  res.stream = [&ctx, job](StreamSink& sink) { stream_events(ctx, *job, sink); };
  return res;
}

}  // namespace anelm::server
