// Qwen3.5 through the official openai npm SDK: a tool call round trip (forced and auto, streamed and
// not) in the model's own XML syntax, and reasoning_content. run_all.sh runs it against a random
// 0.8B-shape qwen35 GGUF made by make_random_qwen35_gguf.py, which carries the real Qwen3.5 template
// and the Qwen3 special tokens (<tool_call>, <think>, ... as single tokens).
//
// The weights are random, so the model's text is noise. Each check asserts what the server enforces
// or what the prompt determines, and steers the model only through request fields a client may send:
//  - forced calls (tool_choice named / "required") are grammar-constrained (with thinking off the grammar
//    offers no <think> block first: server/output_constraint.cpp); these requests still put logit_bias
//    +100 on the <tool_call> token so the random model opens the call at once and the short suite stays
//    short, and the grammar must force the rest (the name, the parameter, a value the schema allows,
//    the closing markup);
//  - auto: the same +100 bias makes the model open a call; the server's lazy grammar must then complete
//    it (a random model would never write the markup itself);
//  - reasoning: the template's thinking mode (the default) ends the prompt with an open "<think>\n", so
//    everything the model writes before "</think>" is reasoning by the prompt's own definition.
// Thinking is turned off (chat_template_kwargs.enable_thinking false) for the tool requests so that
// the prompt does not open a reasoning block the call would have to wait for.
//
// The tool takes one bounded integer: a Qwen XML string value without enum or length bounds is free
// text up to "</parameter>" (chat/xml_call_grammar.h), which a random model never writes, so such a
// parameter would keep a forced call open until max_tokens; and a constrained random model spells the
// markup in small pieces (~45 tokens for this call at ~5 tokens/s on 2 cores), so one parameter keeps
// the suite short.
//
// Usage: node qwen35_check.mjs BASE_URL   (BASE_URL like http://127.0.0.1:8080/v1). Prints 'N passed, M failed'.
import { check, assert, eq, deepEq, finish } from './harness.mjs';
import OpenAI from 'openai';

const baseURL = process.argv[2];
if (!baseURL) {
  console.error('usage: node qwen35_check.mjs BASE_URL');
  process.exit(2);
}
const rootURL = baseURL.replace(/\/v1\/?$/, '');  // /tokenize and /apply-template live at the root
const client = new OpenAI({ baseURL, apiKey: process.env.ANELM_API_KEY || 'none', maxRetries: 0, timeout: 300000 });
const model = (await client.models.list()).data[0].id;

async function root(path, body) {
  const r = await fetch(rootURL + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${process.env.ANELM_API_KEY || 'none'}` },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  assert(r.ok, `${path}: HTTP ${r.status}: ${text}`);
  return JSON.parse(text);
}

// The id of a marker that must be one special token in this vocabulary (else the file is not the
// one run_all.sh makes, and the logit_bias steering below would be meaningless).
async function tokenId(marker) {
  const { tokens } = await root('/tokenize', { content: marker, parse_special: true });
  assert(tokens.length === 1, `${marker} is ${tokens.length} tokens (${JSON.stringify(tokens)}): not the Qwen3 special token`);
  return tokens[0];
}
const TOOL_CALL = await tokenId('<tool_call>');
const THINK = await tokenId('<think>');

const FORECAST = {
  type: 'object',
  properties: {
    days: { type: 'integer', minimum: 1, maximum: 7 },
  },
  required: ['days'],
  additionalProperties: false,
};
const TOOLS = [{ type: 'function', function: { name: 'get_forecast', description: 'Weather forecast for the next days', parameters: FORECAST } }];
const ASK = [{ role: 'user', content: 'What is the forecast for the next three days?' }];
const NO_THINKING = { enable_thinking: false };
// Enough for one call (~45 tokens) and the end of turn.
const CALL_TOKENS = 64;

function validForecast(args, what) {
  let v;
  try {
    v = JSON.parse(args);
  } catch (e) {
    throw new Error(`${what}: arguments are not JSON (${e.message}): ${JSON.stringify(args)}`);
  }
  assert(v && typeof v === 'object' && !Array.isArray(v), `${what}: not an object: ${args}`);
  deepEq(Object.keys(v), ['days'], `${what} keys`);
  assert(Number.isInteger(v.days) && v.days >= 1 && v.days <= 7, `${what}.days ${JSON.stringify(v.days)}`);
  return v;
}

// No markup of the model's syntax may reach the visible text.
function noMarkup(text, what) {
  if (text == null) return;
  for (const m of ['<tool_call>', '</tool_call>', '<function=', '<parameter=', '<think>', '</think>'])
    assert(!text.includes(m), `${what} contains ${m}: ${JSON.stringify(text)}`);
}

// A non-streamed tool-call response: one or more valid calls of get_forecast.
function callsOf(r, what) {
  const c = r.choices[0];
  const calls = c.message.tool_calls ?? [];
  assert(calls.length >= 1, `${what}: no tool_calls (finish_reason ${c.finish_reason}): ${JSON.stringify(c.message)}`);
  for (const [i, tc] of calls.entries()) {
    eq(tc.type, 'function', `${what} call ${i} type`);
    assert(/^call_[A-Za-z0-9]{24}$/.test(tc.id), `${what} call ${i} id ${JSON.stringify(tc.id)}`);
    eq(tc.function.name, 'get_forecast', `${what} call ${i} name`);
    validForecast(tc.function.arguments, `${what} call ${i} arguments`);
  }
  assert(!c.message.content, `${what}: content beside the call: ${JSON.stringify(c.message.content)}`);
  noMarkup(c.message.content, `${what} content`);
  return calls;
}

// A streamed reply assembled from its deltas, checking the delta protocol on the way.
async function streamed(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  const calls = [];
  let content = '';
  let reasoning = '';
  let finishReason = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    for (const c of chunk.choices) {
      eq(c.index, 0, 'choice index');
      assert(finishReason === null, `a delta after finish_reason ${finishReason}`);
      if (c.delta?.content) content += c.delta.content;
      if (c.delta?.reasoning_content) reasoning += c.delta.reasoning_content;
      for (const d of c.delta?.tool_calls ?? []) {
        if (!calls[d.index]) {
          eq(d.index, calls.length, 'new tool call index');
          assert(typeof d.id === 'string' && d.id.length > 0, `first delta of call ${d.index} has no id: ${JSON.stringify(d)}`);
          eq(d.type, 'function', `first delta of call ${d.index} type`);
          calls[d.index] = { id: d.id, name: d.function?.name, args: '' };
        } else {
          assert(d.id === undefined || d.id === calls[d.index].id, `call ${d.index} id changed: ${JSON.stringify(d)}`);
          assert(d.function?.name === undefined || d.function.name === calls[d.index].name, `call ${d.index} name changed`);
        }
        if (d.function?.arguments !== undefined) calls[d.index].args += d.function.arguments;
      }
      if (c.finish_reason) finishReason = c.finish_reason;
    }
  }
  assert(chunks > 1, `only ${chunks} chunk(s)`);
  return { calls, content, reasoning, finishReason };
}

const forced = {
  model,
  messages: ASK,
  tools: TOOLS,
  tool_choice: { type: 'function', function: { name: 'get_forecast' } },
  max_tokens: CALL_TOKENS,
  temperature: 0,
  chat_template_kwargs: NO_THINKING,
  logit_bias: { [TOOL_CALL]: 100 },
};
let forcedCall = null;

await check('qwen35 openai: a named tool_choice gives a valid XML call as tool_calls (non-streamed)', async () => {
  const r = await client.chat.completions.create(forced);
  const calls = callsOf(r, 'named');
  eq(calls.length, 1, 'a named tool_choice gives one call');
  eq(r.choices[0].finish_reason, 'tool_calls', 'finish_reason');
  forcedCall = calls[0];
});

await check('qwen35 openai: the streamed named call assembles to the same call', async () => {
  const s = await streamed(forced);
  eq(s.finishReason, 'tool_calls', 'finish_reason');
  eq(s.calls.length, 1, 'streamed calls');
  eq(s.calls[0].name, 'get_forecast', 'streamed name');
  const args = validForecast(s.calls[0].args, 'streamed arguments');
  if (forcedCall) deepEq(args, JSON.parse(forcedCall.function.arguments), 'streamed arguments vs non-streamed (greedy)');
  eq(s.content, '', 'streamed content');
  eq(s.reasoning, '', 'streamed reasoning');
});

await check('qwen35 openai: tool_choice "required" gives a valid call', async () => {
  const r = await client.chat.completions.create({ ...forced, tool_choice: 'required', parallel_tool_calls: false });
  eq(callsOf(r, 'required').length, 1, 'calls with parallel_tool_calls false');
  eq(r.choices[0].finish_reason, 'tool_calls', 'finish_reason');
});

await check('qwen35 openai: the tool result goes back as a tool message and a final answer comes back', async () => {
  assert(forcedCall, 'no call from the named tool_choice check to answer');
  const messages = [
    ...ASK,
    { role: 'assistant', content: null, tool_calls: [forcedCall] },
    { role: 'tool', tool_call_id: forcedCall.id, content: '{"forecast": ["sun", "rain", "sun"]}' },
  ];
  // The template renders the call in its XML form and the result as a <tool_response> user turn.
  const { prompt } = await root('/apply-template', { messages, tools: TOOLS, chat_template_kwargs: NO_THINKING });
  const args = JSON.parse(forcedCall.function.arguments);
  assert(prompt.includes(`<tool_call>\n<function=get_forecast>\n<parameter=days>\n${args.days}\n</parameter>`), `the call is not rendered as XML: ${prompt.slice(-600)}`);
  assert(prompt.includes('<tool_response>\n{"forecast": ["sun", "rain", "sun"]}\n</tool_response>'), `the result is not rendered: ${prompt.slice(-600)}`);
  // The answer is text: the random model is kept from opening another call or a reasoning block.
  const r = await client.chat.completions.create({
    model, messages, tools: TOOLS, max_tokens: 8, temperature: 0, chat_template_kwargs: NO_THINKING,
    logit_bias: { [TOOL_CALL]: -100, [THINK]: -100 },
  });
  const c = r.choices[0];
  assert(['stop', 'length'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
  assert(!c.message.tool_calls || c.message.tool_calls.length === 0, `tool_calls in the final answer: ${JSON.stringify(c.message.tool_calls)}`);
  assert(typeof c.message.content === 'string' && c.message.content.length > 0, `no final answer: ${JSON.stringify(c.message)}`);
  noMarkup(c.message.content, 'final answer');
  assert(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0, `usage ${JSON.stringify(r.usage)}`);
});

const auto = {
  model,
  messages: ASK,
  tools: TOOLS,
  tool_choice: 'auto',
  parallel_tool_calls: false,
  max_tokens: CALL_TOKENS,
  temperature: 0,
  chat_template_kwargs: NO_THINKING,
  logit_bias: { [TOOL_CALL]: 100 },
};
let autoArgs = null;

await check('qwen35 openai: tool_choice auto: an opened <tool_call> completes as a valid call (non-streamed)', async () => {
  const r = await client.chat.completions.create(auto);
  const calls = callsOf(r, 'auto');
  eq(calls.length, 1, 'calls with parallel_tool_calls false');
  eq(r.choices[0].finish_reason, 'tool_calls', 'finish_reason');
  autoArgs = JSON.parse(calls[0].function.arguments);
});

await check('qwen35 openai: tool_choice auto streamed assembles to the same call', async () => {
  const s = await streamed(auto);
  assert(s.calls.length >= 1, `no streamed call (finish_reason ${s.finishReason}, content ${JSON.stringify(s.content)})`);
  eq(s.calls[0].name, 'get_forecast', 'streamed name');
  const args = validForecast(s.calls[0].args, 'streamed auto arguments');
  if (autoArgs) deepEq(args, autoArgs, 'streamed arguments vs non-streamed (greedy)');
  noMarkup(s.content, 'streamed content');
  eq(s.finishReason, 'tool_calls', 'finish_reason');
});

// Thinking on (the template's default): the generation prompt ends with "<think>\n".
const think = { model, messages: [{ role: 'user', content: 'Think about the weather.' }], max_tokens: 12, temperature: 0 };
let reasoningText = null;

await check('qwen35 openai: thinking on: the text before </think> is reasoning_content, not content', async () => {
  const { prompt } = await root('/apply-template', { messages: think.messages });
  assert(/<think>\n$/.test(prompt), `the generation prompt does not open <think>: ${JSON.stringify(prompt.slice(-40))}`);
  const r = await client.chat.completions.create(think);
  const c = r.choices[0];
  const m = c.message;
  assert(typeof m.reasoning_content === 'string' && m.reasoning_content.length > 0, `no reasoning_content: ${JSON.stringify(m)}`);
  noMarkup(m.reasoning_content, 'reasoning_content');
  // Random text may close the block by chance; then only what follows </think> may be content.
  if (c.finish_reason === 'length') assert(!m.content, `content while still reasoning: ${JSON.stringify(m.content)}`);
  noMarkup(m.content, 'content');
  if (m.content) assert(!m.content.includes(m.reasoning_content), 'the reasoning is repeated in content');
  reasoningText = m.reasoning_content;
});

await check('qwen35 openai: thinking on streamed: reasoning_content deltas, none in content', async () => {
  const s = await streamed(think);
  assert(s.reasoning.length > 0, 'no reasoning_content deltas');
  noMarkup(s.reasoning, 'streamed reasoning');
  if (s.finishReason === 'length') eq(s.content, '', 'streamed content while still reasoning');
  noMarkup(s.content, 'streamed content');
  if (reasoningText !== null) eq(s.reasoning, reasoningText, 'streamed reasoning vs non-streamed (greedy)');
});

await check('qwen35 openai: enable_thinking false: no reasoning_content', async () => {
  const r = await client.chat.completions.create({ ...think, max_tokens: 4, chat_template_kwargs: NO_THINKING, logit_bias: { [THINK]: -100 } });
  const m = r.choices[0].message;
  assert(!m.reasoning_content, `reasoning_content with thinking off: ${JSON.stringify(m)}`);
  assert(typeof m.content === 'string' && m.content.length > 0, `no content: ${JSON.stringify(m)}`);
});

finish();
