// Checks a running anelm server's Ollama API (/api/chat, /api/generate, /api/embed, /api/embeddings,
// /api/tags, /api/show, /api/ps, /api/version, /api/pull) with Ollama's official JavaScript client, the
// `ollama` npm package (ollama-js): the metadata shapes, NDJSON streams against the non-streamed answer,
// the final chunk's counts and nanosecond durations, structured output (`format`), an Ollama-shaped tool
// round trip, generate's `context` round trip, embeddings, the option and error mapping (ResponseError
// with the {error: "..."} body, also for refusals made before an Ollama handler runs), curl's form
// content type and the CORS refusal of a cross-origin form post.
// Where the same request can be made through the OpenAI API of the same server, the answers must be
// equal: the Ollama API is a second front end over the same prompt, sampler and grammar.
//
// The model has random weights: its text is noise. Checks assert what the server ENFORCES (shapes,
// determinism at temperature 0 / top_k 1, schema-constrained output, errors, equality with the OpenAI
// endpoints), never what a sensible model would say. Meant for a chat model with the Qwen2.5 tokenizer
// and template served with --embeddings (run_all.sh runs it for the tiny random qwen2 model).
//
// Usage: node ollama_check.mjs BASE_URL   (BASE_URL like http://127.0.0.1:8080/v1). Prints 'N passed, M failed'.
import { check, assert, eq, deepEq, finish, WEATHER } from './harness.mjs';
import { Ollama } from 'ollama';
import http from 'node:http';

const baseURL = process.argv[2];
if (!baseURL) {
  console.error('usage: node ollama_check.mjs BASE_URL');
  process.exit(2);
}
// Ollama's API lives at the root (/api/...); ollama-js appends /api/<endpoint> to its host.
const rootURL = baseURL.replace(/\/v1\/?$/, '');
const apiKey = process.env.ANELM_API_KEY || 'none';
const auth = { Authorization: `Bearer ${apiKey}` };
// ollama-js's ResponseError has the body's `error` as its message: "[object Object]" for a body that is not
// Ollama's {error: "..."}. The wrapper rethrows with the status and the error in the message (stack traces
// of failed checks); name, status_code and error are kept for expectError.
const client = new Ollama({ host: rootURL, headers: auth });
const ollama = new Proxy(client, {
  get(target, key) {
    const v = target[key];
    if (typeof v !== 'function') return v;
    return async (...args) => {
      try {
        return await v.apply(target, args);
      } catch (e) {
        if (e?.name !== 'ResponseError') throw e;
        const w = new Error(`HTTP ${e.status_code}: ${typeof e.error === 'string' ? e.error : JSON.stringify(e.error)}`);
        throw Object.assign(w, { name: 'ResponseError', status_code: e.status_code, error: e.error });
      }
    };
  },
});
const model = 'anelm';  // not checked by the server: any name is served by the one model

const GREEDY = { temperature: 0, top_k: 1, seed: 1 };
const N = 12;  // num_predict / max_tokens of the greedy comparisons
const HELLO = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Name three colours.' }];
const ASK = { role: 'user', content: 'What is the weather in Paris for the next 3 days?' };
const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'Weather forecast for a city.', parameters: WEATHER } };

// ---- Helpers ----------------------------------------------------------------------------------------
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
function isoDate(s, what) {
  assert(typeof s === 'string' && ISO.test(s) && !Number.isNaN(Date.parse(s)), `${what}: not an ISO 8601 time: ${JSON.stringify(s)}`);
}
function int(v, what, min = 0) {
  assert(Number.isInteger(v) && v >= min, `${what}: not an integer >= ${min}: ${JSON.stringify(v)}`);
  return v;
}

// POST to the server's own (OpenAI, llama.cpp) endpoints; returns {status, body (parsed when JSON)}.
async function post(url, body) {
  const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...auth }, body: JSON.stringify(body) });
  const text = await res.text();
  let parsed = text;
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: parsed, text };
}
async function post200(url, body) {
  const r = await post(url, body);
  eq(r.status, 200, `POST ${url} status (${r.text.slice(0, 400)})`);
  return r.body;
}
const openaiChat = (body) => post200(`${baseURL}/chat/completions`, { model, ...body });

// The final chunk (or non-streamed answer) of /api/chat and /api/generate: done, counts, durations.
function checkFinal(r, what, maxEval) {
  eq(r.done, true, `${what}.done`);
  assert(['stop', 'length'].includes(r.done_reason), `${what}.done_reason ${JSON.stringify(r.done_reason)}`);
  assert(typeof r.model === 'string' && r.model.length > 0, `${what}.model ${JSON.stringify(r.model)}`);
  isoDate(r.created_at, `${what}.created_at`);
  for (const k of ['total_duration', 'load_duration', 'prompt_eval_duration', 'eval_duration']) int(r[k], `${what}.${k}`);
  assert(r.total_duration > 0, `${what}.total_duration 0`);
  int(r.prompt_eval_count, `${what}.prompt_eval_count`, 1);
  int(r.eval_count, `${what}.eval_count`);
  if (maxEval !== undefined) {
    assert(r.eval_count <= maxEval, `${what}.eval_count ${r.eval_count} > num_predict ${maxEval}`);
    if (r.done_reason === 'length') eq(r.eval_count, maxEval, `${what}.eval_count at done_reason length`);
  }
}

// A streamed /api/chat: every chunk's shape, the content, thinking and tool calls put together, the final chunk.
async function chatStream(params) {
  let content = '';
  let thinking = '';
  const toolCalls = [];
  let last = null;
  let n = 0;
  for await (const part of await ollama.chat({ ...params, stream: true })) {
    assert(last === null, `a chunk after the done chunk: ${JSON.stringify(part)}`);
    n++;
    eq(part.message?.role, 'assistant', `chunk ${n} message.role`);
    eq(typeof part.message.content, 'string', `chunk ${n} message.content type`);
    if (part.done) {
      last = part;
      eq(part.message.content, '', 'the done chunk\'s content');
      assert(!part.message.tool_calls?.length, `tool calls in the done chunk: ${JSON.stringify(part)}`);
      break;
    }
    eq(part.done, false, `chunk ${n}.done`);
    isoDate(part.created_at, `chunk ${n}.created_at`);
    content += part.message.content;
    thinking += part.message.thinking ?? '';
    if (part.message.tool_calls) toolCalls.push(...part.message.tool_calls);
  }
  assert(last, 'no done chunk');
  return { content, thinking, toolCalls, final: last, chunks: n };
}

// A streamed /api/generate.
async function generateStream(params) {
  let response = '';
  let last = null;
  for await (const part of await ollama.generate({ ...params, stream: true })) {
    assert(last === null, `a chunk after the done chunk: ${JSON.stringify(part)}`);
    eq(typeof part.response, 'string', 'chunk response type');
    if (part.done) {
      last = part;
      eq(part.response, '', 'the done chunk\'s response');
      break;
    }
    eq(part.done, false, 'chunk done');
    response += part.response;
  }
  assert(last, 'no done chunk');
  return { response, final: last };
}

// The ResponseError an ollama-js call throws: HTTP status and the {error: "..."} body's message.
async function expectError(fn, status, needle, what) {
  let err = null;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  assert(err, `${what}: no error`);
  eq(err.name, 'ResponseError', `${what}: error class (${err})`);
  eq(err.status_code, status, `${what}: status (${JSON.stringify(err.error)})`);
  assert(typeof err.error === 'string' && err.error.length > 0, `${what}: body's error is not a message string: ${JSON.stringify(err.error)}`);
  if (needle) assert(err.error.includes(needle), `${what}: message does not name ${needle}: ${JSON.stringify(err.error)}`);
  return err;
}

// `curl -d`: a raw request with the given headers (node:http, so that Origin is sent as given).
function rawRequest(method, path, headers, body) {
  return new Promise((resolve, reject) => {
    const u = new URL(path, rootURL);
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method,
      headers: { ...headers, ...auth, 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
const rawPost = (path, headers, body) => rawRequest('POST', path, headers, body);

// The check's JSON schema: bounded, so that a constrained answer completes well inside num_predict.
const SCHEMA = {
  type: 'object',
  properties: { count: { type: 'integer', minimum: 0, maximum: 99 }, ok: { type: 'boolean' } },
  required: ['count', 'ok'],
  additionalProperties: false,
};
function matchesSchema(text, what) {
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`${what} is not JSON (${e.message}): ${JSON.stringify(text)}`);
  }
  assert(v && typeof v === 'object' && !Array.isArray(v), `${what}: not an object: ${text}`);
  deepEq(Object.keys(v).sort(), ['count', 'ok'], `${what} keys`);
  assert(Number.isInteger(v.count) && v.count >= 0 && v.count <= 99, `${what}.count ${v.count}`);
  eq(typeof v.ok, 'boolean', `${what}.ok type`);
  return v;
}

// ---- 1. Metadata ------------------------------------------------------------------------------------
let listed = null;
let shown = null;
await check('ollama: version, list (/api/tags), show and ps shapes', async () => {
  const v = await ollama.version();
  assert(typeof v.version === 'string' && /^\d+\.\d+\.\d+$/.test(v.version), `version ${JSON.stringify(v)}`);

  const tags = await ollama.list();
  assert(Array.isArray(tags.models), `tags.models ${JSON.stringify(tags)}`);
  eq(tags.models.length, 1, 'tags: one model, the served one');
  listed = tags.models[0];
  assert(typeof listed.name === 'string' && listed.name.length > 0, `tags name ${JSON.stringify(listed.name)}`);
  assert(typeof listed.model === 'string' && listed.model.length > 0, `tags model ${JSON.stringify(listed.model)}`);
  isoDate(listed.modified_at, 'tags modified_at');
  int(listed.size, 'tags size (file bytes)', 1);
  assert(/^[0-9a-f]{64}$/.test(listed.digest), `tags digest ${JSON.stringify(listed.digest)}`);
  const d = listed.details;
  eq(d?.parent_model, '', 'details.parent_model');
  eq(d.format, 'gguf', 'details.format');
  assert(typeof d.family === 'string' && d.family.length > 0, `details.family ${JSON.stringify(d.family)}`);
  assert(Array.isArray(d.families) && d.families.every((f) => typeof f === 'string' && f.length > 0), `details.families ${JSON.stringify(d.families)}`);
  assert(/^\d+(\.\d+)?[KMBT]$/.test(d.parameter_size), `details.parameter_size ${JSON.stringify(d.parameter_size)}`);
  assert(typeof d.quantization_level === 'string' && d.quantization_level.length > 0, `details.quantization_level ${JSON.stringify(d.quantization_level)}`);

  shown = await ollama.show({ model: listed.name });
  for (const k of ['modelfile', 'parameters', 'template']) eq(typeof shown[k], 'string', `show.${k} type`);
  // Qwen2.5's chat template (ChatML turns, tools in <tools></tools>, calls in <tool_call>).
  assert(shown.template.includes('<|im_start|>') && shown.template.includes('<tool_call>'), `show.template is not Qwen2.5's: ${shown.template.slice(0, 300)}`);
  deepEq(shown.details, listed.details, 'show.details vs tags details');
  isoDate(shown.modified_at, 'show.modified_at');
  const info = shown.model_info;
  const arch = info?.['general.architecture'];
  assert(typeof arch === 'string' && arch.length > 0, `model_info general.architecture ${JSON.stringify(arch)}`);
  const params = int(info['general.parameter_count'], 'model_info general.parameter_count', 1);
  // parameter_size is general.parameter_count in Ollama's human form ("494.03M").
  const unit = { K: 1e3, M: 1e6, B: 1e9, T: 1e12 }[d.parameter_size.at(-1)];
  const approx = parseFloat(d.parameter_size) * unit;
  assert(Math.abs(approx - params) <= 0.01 * params, `parameter_size ${d.parameter_size} vs parameter_count ${params}`);
  const ctxLen = int(info[`${arch}.context_length`], `model_info ${arch}.context_length`, 1);
  const health = await (await fetch(`${rootURL}/health`)).json();
  if (health.n_ctx !== undefined) eq(ctxLen, health.n_ctx, `${arch}.context_length vs /health n_ctx (the served context)`);
  const caps = shown.capabilities;
  assert(Array.isArray(caps) && caps.includes('completion') && caps.includes('tools'), `capabilities ${JSON.stringify(caps)}`);
  assert(!caps.includes('thinking'), `capabilities: thinking for Qwen2.5's template: ${JSON.stringify(caps)}`);
  // "insert" iff the vocab has fill-in-the-middle tokens, i.e. iff the server takes a suffix.
  const fim = await post(`${baseURL}/completions`, { model, prompt: 'def f(', suffix: '\n  return 1\n', max_tokens: 1 });
  eq(caps.includes('insert'), fim.status === 200, `capabilities insert ${JSON.stringify(caps)} vs /v1/completions suffix status ${fim.status}`);

  const ps = await ollama.ps();
  assert(Array.isArray(ps.models), `ps.models ${JSON.stringify(ps)}`);
  eq(ps.models.length, 1, 'ps: one model');
  const p = ps.models[0];
  eq(p.name, listed.name, 'ps name vs tags name');
  eq(p.model, listed.model, 'ps model vs tags model');
  eq(p.digest, listed.digest, 'ps digest vs tags digest');
  int(p.size, 'ps size (bytes in memory, as in Ollama: not the file size)', 1);
  deepEq(p.details, listed.details, 'ps details vs tags details');
  isoDate(p.expires_at, 'ps expires_at');
  eq(p.size_vram, 0, 'ps size_vram');
  eq(p.context_length, ctxLen, 'ps context_length vs show\'s');
});

// ---- 2. Chat ----------------------------------------------------------------------------------------
let greedy = null;
await check('ollama: chat greedy: streamed == non-streamed == /v1/chat/completions; final chunk counts', async () => {
  const params = { model, messages: HELLO, options: { ...GREEDY, num_predict: N } };
  greedy = await ollama.chat({ ...params, stream: false });
  eq(greedy.message?.role, 'assistant', 'message.role');
  eq(typeof greedy.message.content, 'string', 'message.content type');
  assert(greedy.message.content.length > 0, 'empty content');
  checkFinal(greedy, 'non-streamed', N);

  const s = await chatStream({ ...params, keep_alive: '5m' });
  assert(s.chunks >= 2, `only ${s.chunks} chunks`);
  eq(s.content, greedy.message.content, 'streamed content vs non-streamed');
  checkFinal(s.final, 'done chunk', N);
  eq(s.final.done_reason, greedy.done_reason, 'done_reason streamed vs non-streamed');
  eq(s.final.eval_count, greedy.eval_count, 'eval_count streamed vs non-streamed');

  const o = await openaiChat({ messages: HELLO, temperature: 0, top_k: 1, seed: 1, max_tokens: N });
  eq(greedy.message.content, o.choices[0].message.content, 'content vs /v1/chat/completions');
  eq(greedy.done_reason, o.choices[0].finish_reason, 'done_reason vs finish_reason');
  eq(greedy.eval_count, o.usage.completion_tokens, 'eval_count vs completion_tokens');
});

await check('ollama: options stop and num_predict honoured; num_ctx, num_thread, ... accepted and ignored', async () => {
  assert(greedy, 'needs the greedy chat');
  const ignored = { num_ctx: 2048, num_thread: 2, num_gpu: 0, num_batch: 64, use_mmap: true, numa: false, num_keep: 4 };
  const same = await ollama.chat({ model, messages: HELLO, options: { ...GREEDY, num_predict: N, ...ignored } });
  eq(same.message.content, greedy.message.content, 'content with the ignored options');
  const short = await ollama.chat({ model, messages: HELLO, options: { ...GREEDY, num_predict: 3 } });
  assert(short.eval_count <= 3, `eval_count ${short.eval_count} > num_predict 3`);
  assert(greedy.message.content.startsWith(short.message.content), `num_predict 3 text ${JSON.stringify(short.message.content)} is no prefix of ${JSON.stringify(greedy.message.content)}`);
  const full = (await ollama.chat({ model, messages: HELLO, options: { ...GREEDY, num_predict: 32 } })).message.content;
  const chars = [...full];
  assert(chars.length >= 8, `reply too short for the stop check: ${JSON.stringify(full)}`);
  const stop = chars.slice(4, 7).join('');
  const cut = full.indexOf(stop);
  const r = await ollama.chat({ model, messages: HELLO, options: { ...GREEDY, num_predict: 32, stop: ['\u0001never', stop] } });
  eq(r.done_reason, 'stop', 'done_reason at a stop string');
  eq(r.message.content, full.slice(0, cut), 'content before the stop string');
  const s = await chatStream({ model, messages: HELLO, options: { ...GREEDY, num_predict: 32, stop: [stop] } });
  eq(s.content, r.message.content, 'streamed content before the stop string');
});

// ---- 3. Structured output ---------------------------------------------------------------------------
await check('ollama: chat format = JSON schema (parses and matches; == /v1 json_schema) and format "json"', async () => {
  const messages = [{ role: 'user', content: 'How many colours has a rainbow? Is it pretty? Answer in JSON.' }];
  const opts = { ...GREEDY, num_predict: 400 };
  const r = await ollama.chat({ model, messages, format: SCHEMA, options: opts });
  eq(r.done_reason, 'stop', `schema answer done_reason (content ${JSON.stringify(r.message.content)})`);
  matchesSchema(r.message.content, 'format schema content');
  const s = await chatStream({ model, messages, format: SCHEMA, options: opts });
  eq(s.content, r.message.content, 'streamed schema content');
  const o = await openaiChat({ messages, temperature: 0, top_k: 1, seed: 1, max_tokens: 400,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: SCHEMA, strict: true } } });
  eq(r.message.content, o.choices[0].message.content, 'schema content vs /v1 response_format json_schema');

  // An object of any shape is unbounded: the random model may well run out of num_predict inside it.
  const j = await ollama.chat({ model, messages, format: 'json', options: { ...GREEDY, num_predict: 64 } });
  const oj = await openaiChat({ messages, temperature: 0, top_k: 1, seed: 1, max_tokens: 64, response_format: { type: 'json_object' } });
  eq(j.message.content, oj.choices[0].message.content, 'format json content vs /v1 response_format json_object');
  const t = j.message.content;
  if (j.done_reason === 'stop') {
    let v;
    try { v = JSON.parse(t); } catch (e) { throw new Error(`format json content is not JSON (${e.message}): ${JSON.stringify(t)}`); }
    assert(v && typeof v === 'object' && !Array.isArray(v), `format json: not an object: ${t}`);
  } else {
    // The random model ran out of num_predict inside an unbounded object: at least it started one.
    assert(/^\s*\{/.test(t), `format json content does not start an object: ${JSON.stringify(t)}`);
  }
});

// ---- 4. Tools ---------------------------------------------------------------------------------------
await check('ollama: tool round trip (assistant tool_calls with object arguments, tool_name) == /v1 with the OpenAI shape', async () => {
  const args = { city: 'Paris', days: 3 };
  const result = '{"temp":21}';
  const ollamaMessages = [ASK,
    { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: args } }] },
    { role: 'tool', tool_name: 'get_weather', content: result }];
  const openaiMessages = [ASK,
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(args) } }] },
    { role: 'tool', tool_call_id: 'call_1', name: 'get_weather', content: result }];
  const r = await ollama.chat({ model, messages: ollamaMessages, tools: [weatherTool], options: { ...GREEDY, num_predict: 16 } });
  checkFinal(r, 'tool turn', 16);
  const o = await openaiChat({ messages: openaiMessages, tools: [weatherTool], temperature: 0, top_k: 1, seed: 1, max_tokens: 16 });
  const om = o.choices[0].message;
  const calls = (r.message.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]);
  const ocalls = (om.tool_calls ?? []).map((c) => [c.function.name, JSON.parse(c.function.arguments)]);
  for (const [, a] of calls) assert(a && typeof a === 'object' && !Array.isArray(a), `tool call arguments not an object: ${JSON.stringify(a)}`);
  if (r.message.content !== (om.content ?? '') || JSON.stringify(calls) !== JSON.stringify(ocalls)) {
    // Show what each shape renders to, for the report.
    const render = async (messages) => {
      const t = await post(`${rootURL}/apply-template`, { model, messages, tools: [weatherTool] });
      return t.status === 200 ? t.body.prompt : `(status ${t.status}: ${t.text})`;
    };
    console.log(`---- /apply-template, OpenAI shape:\n${await render(openaiMessages)}`);
    console.log(`---- /apply-template, Ollama shape as sent to /api/chat (an OpenAI parser may refuse it):\n${await render(ollamaMessages)}`);
    console.log(`---- prompt_eval_count ${r.prompt_eval_count}, /v1 prompt_tokens ${o.usage.prompt_tokens}`);
  }
  eq(r.message.content, om.content ?? '', 'content vs /v1/chat/completions (OpenAI-shaped history)');
  deepEq(calls, ocalls, 'tool calls vs /v1/chat/completions');
});

// ---- 5. Generate ------------------------------------------------------------------------------------
await check('ollama: generate greedy: streamed == non-streamed; context round trip; raw; empty prompt; == chat', async () => {
  const prompt = 'List four animals that live in the sea.';  // not sent before: no prompt-cache hit
  const params = { model, prompt, options: { ...GREEDY, num_predict: N } };
  const whole = await ollama.generate({ ...params, stream: false });
  eq(typeof whole.response, 'string', 'response type');
  checkFinal(whole, 'generate', N);
  const isCtx = (c, what) => assert(Array.isArray(c) && c.length > 0 && c.every((t) => Number.isInteger(t) && t >= 0), `${what}: ${JSON.stringify(c)}`);
  isCtx(whole.context, 'context');
  eq(whole.context.length, whole.prompt_eval_count + whole.eval_count, 'context length vs prompt_eval_count + eval_count');

  const s = await generateStream(params);
  eq(s.response, whole.response, 'streamed response vs non-streamed');
  checkFinal(s.final, 'generate done chunk', N);
  deepEq(s.final.context, whole.context, 'streamed context vs non-streamed');
  eq(s.final.context.length, s.final.prompt_eval_count + s.final.eval_count, 'streamed context length vs prompt_eval_count + eval_count (a prompt-cache hit)');

  // The context goes back in: the new context extends the old one.
  const next = await ollama.generate({ model, prompt: 'And four more.', context: whole.context, options: { ...GREEDY, num_predict: N } });
  checkFinal(next, 'generate with context', N);
  isCtx(next.context, 'second context');
  assert(next.context.length > whole.context.length, `second context ${next.context.length} tokens, first ${whole.context.length}`);
  deepEq(next.context.slice(0, whole.context.length), whole.context, 'second context starts with the first');

  // generate (prompt as one user turn, system as the system turn) == chat with those messages.
  for (const msgs of [[{ role: 'user', content: prompt }], HELLO]) {
    const user = msgs.at(-1).content;
    const sys = msgs.find((m) => m.role === 'system')?.content;
    const g = await ollama.generate({ model, prompt: user, ...(sys ? { system: sys } : {}), options: { ...GREEDY, num_predict: N } });
    const c = await ollama.chat({ model, messages: msgs, options: { ...GREEDY, num_predict: N } });
    eq(g.response, c.message.content, `generate vs chat${sys ? ' (with system)' : ''}`);
  }

  // raw: the prompt as given (here the chat prompt /apply-template renders): no context, the chat's answer.
  const rendered = (await post200(`${rootURL}/apply-template`, { model, messages: HELLO })).prompt;
  const raw = await ollama.generate({ model, prompt: rendered, raw: true, options: { ...GREEDY, num_predict: N } });
  checkFinal(raw, 'raw generate', N);
  eq(raw.context, undefined, 'raw generate context');
  eq(raw.response, greedy?.message?.content, 'raw generate of the rendered chat prompt vs chat');

  const empty = await ollama.generate({ model, prompt: '' });
  eq(empty.response, '', 'empty prompt response');
  eq(empty.done, true, 'empty prompt done');
  eq(empty.done_reason, 'load', 'empty prompt done_reason');

  const fim = await ollama.generate({ model, prompt: 'def add(a, b):\n', suffix: '\n    return c\n', options: { ...GREEDY, num_predict: 8 } });
  checkFinal(fim, 'generate with suffix', 8);
});

// ---- 6. Embeddings ----------------------------------------------------------------------------------
await check('ollama: embed (string, array) unit vectors == /v1/embeddings; legacy embeddings', async () => {
  const texts = ['The sky is blue.', 'Grass is green.'];
  const one = await ollama.embed({ model, input: texts[0] });
  const two = await ollama.embed({ model, input: texts, truncate: true });
  for (const [r, n, what] of [[one, 1, 'string input'], [two, 2, 'array input']]) {
    assert(typeof r.model === 'string', `${what}: model ${JSON.stringify(r.model)}`);
    assert(Array.isArray(r.embeddings) && r.embeddings.length === n, `${what}: ${n} embeddings expected, got ${JSON.stringify(r.embeddings)?.slice(0, 200)}`);
    int(r.total_duration, `${what} total_duration`);
    int(r.load_duration, `${what} load_duration`);
    int(r.prompt_eval_count, `${what} prompt_eval_count`, n);
  }
  const dim = one.embeddings[0].length;
  assert(dim > 0, 'empty vector');
  const v1 = await post200(`${baseURL}/embeddings`, { model, input: texts });
  const close = (a, b, what) => {
    eq(a.length, b.length, `${what} dimension`);
    const worst = Math.max(...a.map((x, i) => Math.abs(x - b[i])));
    assert(worst <= 1e-5, `${what}: differs by ${worst}`);
  };
  two.embeddings.forEach((e, i) => {
    assert(e.every((x) => typeof x === 'number' && Number.isFinite(x)), `embeddings[${i}] not all finite numbers`);
    const norm = Math.hypot(...e);
    assert(Math.abs(norm - 1) <= 1e-4, `embeddings[${i}] norm ${norm}`);
    close(e, v1.data[i].embedding, `embeddings[${i}] vs /v1/embeddings`);
  });
  close(one.embeddings[0], two.embeddings[0], 'string input vs the array\'s first');
  const legacy = await ollama.embeddings({ model, prompt: texts[0] });
  assert(Array.isArray(legacy.embedding), `legacy: ${JSON.stringify(legacy).slice(0, 200)}`);
  eq(legacy.embedding.length, dim, 'legacy embedding dimension');
});

// ---- 7. Errors --------------------------------------------------------------------------------------
await check('ollama: errors: unsupported samplers, images, a template in generate -> 400 ResponseError', async () => {
  const msgs = [{ role: 'user', content: 'hi' }];
  await expectError(() => ollama.chat({ model, messages: msgs, options: { mirostat: 1 } }), 400, 'mirostat', 'mirostat 1');
  await expectError(() => ollama.chat({ model, messages: msgs, options: { typical_p: 0.5 } }), 400, 'typical_p', 'typical_p 0.5');
  await expectError(() => ollama.generate({ model, prompt: 'hi', options: { tfs_z: 0.5 } }), 400, 'tfs_z', 'tfs_z 0.5 (generate)');
  // Their neutral values are accepted.
  await ollama.chat({ model, messages: msgs, options: { mirostat: 0, typical_p: 1, tfs_z: 1, num_predict: 1 } });
  await expectError(() => ollama.chat({ model, messages: [{ role: 'user', content: 'look', images: ['aGk='] }] }), 400, 'images', 'chat images');
  await expectError(() => ollama.generate({ model, prompt: 'hi', template: '{{ .Prompt }}' }), 400, null, 'generate template');
  // A streamed request refused before it starts is an HTTP error too, not an error line in the stream.
  await expectError(() => ollama.chat({ model, messages: msgs, stream: true, options: { mirostat: 2 } }), 400, 'mirostat', 'streamed mirostat 2');
});

// ---- 8. curl -d ------------------------------------------------------------------------------------
await check('ollama: curl -d (form content type) works; with a foreign Origin it is refused', async () => {
  const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
  const body = JSON.stringify({ model, prompt: 'Why is the sky blue?', options: { ...GREEDY, num_predict: 4 } });  // stream defaults to true
  const r = await rawPost('/api/generate', form, body);
  eq(r.status, 200, `status (${r.body.slice(0, 300)})`);
  assert(String(r.headers['content-type']).startsWith('application/x-ndjson'), `content-type ${r.headers['content-type']}`);
  const lines = r.body.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  assert(lines.length >= 2, `${lines.length} NDJSON lines`);
  eq(lines.at(-1).done, true, 'last line done');
  assert(lines.slice(0, -1).every((l) => l.done === false), 'done before the last line');
  const evil = await rawPost('/api/generate', { ...form, Origin: 'http://evil.example' }, body);
  assert([403, 415].includes(evil.status), `cross-origin form post: status ${evil.status} (${evil.body.slice(0, 300)})`);
});

// ---- 9. Pull ----------------------------------------------------------------------------------------
await check('ollama: pull (the served model) returns status success', async () => {
  const r = await ollama.pull({ model });
  eq(r.status, 'success', `pull ${JSON.stringify(r)}`);
  const seen = [];
  for await (const p of await ollama.pull({ model, stream: true })) seen.push(p.status);
  eq(seen.at(-1), 'success', `streamed pull statuses ${JSON.stringify(seen)}`);
});

// ---- 10. Refusals -----------------------------------------------------------------------------------
await check('ollama: refusals on /api paths (CORS, method, route, unimplemented calls) have Ollama\'s {error: "..."} body', async () => {
  // ollama-js takes the body's `error` as the ResponseError's message: it must be a string here too, for
  // the refusals made before an Ollama handler runs.
  const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
  const body = JSON.stringify({ model, prompt: 'hi', options: { num_predict: 1 } });
  const raw = [
    ['cross-origin form POST /api/generate', await rawPost('/api/generate', { ...form, Origin: 'http://evil.example' }, body)],
    ['GET /api/chat', await rawRequest('GET', '/api/chat', {}, '')],
    ['POST /api/nope', await rawPost('/api/nope', { 'Content-Type': 'application/json' }, '{}')],
  ];
  const bad = [];
  for (const [what, r] of raw) {
    let e;
    try { e = JSON.parse(r.body).error; } catch { e = undefined; }
    if (r.status < 400 || typeof e !== 'string' || e.length === 0) bad.push(`${what} -> ${r.status} ${r.body}`);
  }
  // The management calls of ollama-js that a one-model server does not do.
  for (const [what, call] of [['copy', () => ollama.copy({ source: model, destination: 'b' })], ['create', () => ollama.create({ model: 'b', from: model })],
    ['push', () => ollama.push({ model })], ['delete', () => ollama.delete({ model: 'b' })]]) {
    try {
      await call();
      bad.push(`ollama.${what} succeeded`);
    } catch (e) {
      if (e.name !== 'ResponseError' || typeof e.error !== 'string' || e.status_code < 400) bad.push(`ollama.${what} -> ${e.status_code} ${JSON.stringify(e.error ?? String(e))}`);
    }
  }
  assert(bad.length === 0, `not Ollama's error body:\n  ${bad.join('\n  ')}`);
});

finish();
