// Checks a running anelm server's tool calling and structured output with the clients people point at
// it: the official openai npm SDK, LangChain JS (@langchain/openai) and the Vercel AI SDK
// (@ai-sdk/openai-compatible). Meant for a chat model whose template has a tool-call syntax (run.sh
// runs it for the tiny qwen2 model with the Qwen2.5 tokenizer and template).
//
// The model has random weights: its text is noise. Every check therefore asserts only what the server
// ENFORCES (grammar-constrained JSON, forced tool calls, response shapes, template rendering, errors),
// never what a sensible model would say. Schemas are small and bounded (enums, maxLength strings,
// integer ranges) so that a constrained answer always completes well inside max_tokens.
//
// Usage: node tools_check.mjs BASE_URL   (BASE_URL like http://127.0.0.1:8080/v1). Prints 'N passed, M failed'.
import { check, assert, eq, deepEq, finish, WEATHER } from './harness.mjs';
import OpenAI from 'openai';
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage, AIMessage, ToolMessage } from '@langchain/core/messages';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText, Output, tool } from 'ai';
import { z } from 'zod';

const baseURL = process.argv[2];
if (!baseURL) {
  console.error('usage: node tools_check.mjs BASE_URL');
  process.exit(2);
}
const apiKey = process.env.ANELM_API_KEY || 'none';
const rootURL = baseURL.replace(/\/v1\/?$/, '');  // /apply-template lives at the root, as in llama-server
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });

// ---- A validator for the JSON Schema subset these checks use -------------------------------------
// type (object, string, integer, number, boolean), properties, required, additionalProperties: false,
// enum, minLength / maxLength (in code points, as JSON Schema counts), minimum / maximum.
function validate(value, schema, path = '$') {
  const t = schema.type;
  if (schema.enum && !schema.enum.some((e) => e === value)) throw new Error(`${path}: ${JSON.stringify(value)} not in enum ${JSON.stringify(schema.enum)}`);
  if (t === 'object') {
    assert(value !== null && typeof value === 'object' && !Array.isArray(value), `${path}: not an object: ${JSON.stringify(value)}`);
    const props = schema.properties || {};
    for (const k of schema.required || []) assert(k in value, `${path}: missing required '${k}' in ${JSON.stringify(value)}`);
    for (const [k, v] of Object.entries(value)) {
      if (k in props) validate(v, props[k], `${path}.${k}`);
      else assert(schema.additionalProperties !== false, `${path}: unexpected property '${k}'`);
    }
  } else if (t === 'string') {
    assert(typeof value === 'string', `${path}: not a string: ${JSON.stringify(value)}`);
    const n = [...value].length;
    if (schema.maxLength !== undefined) assert(n <= schema.maxLength, `${path}: ${n} characters > maxLength ${schema.maxLength}`);
    if (schema.minLength !== undefined) assert(n >= schema.minLength, `${path}: ${n} characters < minLength ${schema.minLength}`);
  } else if (t === 'integer' || t === 'number') {
    assert(typeof value === 'number' && Number.isFinite(value), `${path}: not a number: ${JSON.stringify(value)}`);
    if (t === 'integer') assert(Number.isInteger(value), `${path}: not an integer: ${value}`);
    if (schema.minimum !== undefined) assert(value >= schema.minimum, `${path}: ${value} < minimum ${schema.minimum}`);
    if (schema.maximum !== undefined) assert(value <= schema.maximum, `${path}: ${value} > maximum ${schema.maximum}`);
  } else if (t === 'boolean') {
    assert(typeof value === 'boolean', `${path}: not a boolean: ${JSON.stringify(value)}`);
  } else if (t !== undefined) {
    throw new Error(`validator: type ${t} not in the subset`);
  }
  return value;
}
function parseValid(text, schema, what) {
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`${what} is not JSON (${e.message}): ${JSON.stringify(text)}`);
  }
  return validate(v, schema, what);
}

// ---- Is `s` a prefix of (or exactly) one JSON object? -------------------------------------------
// For response_format json_object, whose objects are unbounded: the random model may run out of
// max_tokens inside a string, and then the truncated text must still be a valid beginning.
// Returns true when complete (trailing whitespace allowed), false when a valid unfinished prefix,
// throws on anything that no continuation could make valid.
class Incomplete extends Error {}
function jsonObjectPrefix(s) {
  let i = 0;
  const bad = (why) => { throw new Error(`not a JSON object prefix at ${i} (${why}): ${JSON.stringify(s)}`); };
  const peek = () => { if (i >= s.length) throw new Incomplete(); return s[i]; };
  const ws = () => { while (i < s.length && ' \t\n\r'.includes(s[i])) i++; };
  const expect = (c) => { if (peek() !== c) bad(`expected ${c}`); i++; };
  const str = () => {
    expect('"');
    for (;;) {
      const c = peek();
      i++;
      if (c === '"') return;
      if (c === '\\') {
        const e = peek();
        i++;
        if (e === 'u') for (let k = 0; k < 4; k++) { if (!/[0-9a-fA-F]/.test(peek())) bad('\\u escape'); i++; }
        else if (!'"\\/bfnrt'.includes(e)) bad('escape');
      } else if (c < ' ') bad('control character in a string');
    }
  };
  const num = () => {
    const start = i;
    while (i < s.length && /[-+0-9.eE]/.test(s[i])) i++;
    const tok = s.slice(start, i);
    if (i >= s.length) {
      if (!/^-?(0|[1-9][0-9]*)?(\.[0-9]*)?([eE][-+]?[0-9]*)?$/.test(tok) || (/^-?0[0-9]/.test(tok))) bad('number');
      throw new Incomplete();
    }
    if (!/^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$/.test(tok)) bad(`number ${tok}`);
  };
  const value = () => {
    ws();
    const c = peek();
    if (c === '{') return obj();
    if (c === '[') return arr();
    if (c === '"') return str();
    for (const w of ['true', 'false', 'null']) if (c === w[0]) { for (const ch of w) expect(ch); return; }
    if (/[-0-9]/.test(c)) return num();
    bad('value');
  };
  const obj = () => {
    expect('{');
    ws();
    if (peek() === '}') { i++; return; }
    for (;;) {
      ws(); str(); ws(); expect(':'); value(); ws();
      const c = peek();
      i++;
      if (c === '}') return;
      if (c !== ',') bad('expected , or }');
    }
  };
  const arr = () => {
    expect('[');
    ws();
    if (peek() === ']') { i++; return; }
    for (;;) {
      value(); ws();
      const c = peek();
      i++;
      if (c === ']') return;
      if (c !== ',') bad('expected , or ]');
    }
  };
  try {
    ws();
    if (peek() !== '{') bad('does not start with {');
    obj();
    ws();
    if (i < s.length) bad('text after the object');
    return true;
  } catch (e) {
    if (e instanceof Incomplete) return false;
    throw e;
  }
}

// ---- Schemas and tools -----------------------------------------------------------------------------
const TIME = {
  type: 'object',
  properties: { zone: { type: 'string', enum: ['utc', 'cet', 'pst'] }, exact: { type: 'boolean' } },
  required: ['zone', 'exact'],
  additionalProperties: false,
};
const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'Weather forecast for a city.', parameters: WEATHER } };
const timeTool = { type: 'function', function: { name: 'get_time', description: 'Current time in a zone.', parameters: TIME } };
const SCHEMA_OF = { get_weather: WEATHER, get_time: TIME };
const zWeather = z.object({
  city: z.string().max(12),
  unit: z.enum(['c', 'f']),
  days: z.number().int().min(1).max(7),
});
function zValid(value, what) {
  const r = zWeather.safeParse(value);
  assert(r.success, `${what} fails the zod schema: ${JSON.stringify(value)} ${r.success ? '' : r.error.message}`);
  validate(value, WEATHER, what);  // and the plain JSON Schema (same constraints)
  return value;
}

const ASK = [{ role: 'user', content: 'What is the weather in Paris for the next 3 days? Answer in JSON.' }];
const MAX = 400;  // bounded schemas finish far below this
let model = 'anelm';

// One tool call of a non-streamed choice: shape, name, arguments valid against that tool's schema.
function checkCall(call, names, what) {
  assert(typeof call.id === 'string' && call.id.length > 0, `${what}.id: ${JSON.stringify(call.id)}`);
  eq(call.type, 'function', `${what}.type`);
  assert(names.includes(call.function.name), `${what}.function.name ${JSON.stringify(call.function.name)} not in ${names}`);
  eq(typeof call.function.arguments, 'string', `${what}.function.arguments type`);
  return parseValid(call.function.arguments, SCHEMA_OF[call.function.name], `${what}.function.arguments`);
}
function checkToolChoice(choice, names, what) {
  eq(choice.finish_reason, 'tool_calls', `${what} finish_reason`);
  const m = choice.message;
  eq(m.role, 'assistant', `${what} role`);
  assert(m.content === null || m.content === '' || m.content === undefined, `${what} content: ${JSON.stringify(m.content)}`);
  assert(Array.isArray(m.tool_calls) && m.tool_calls.length >= 1, `${what} tool_calls: ${JSON.stringify(m.tool_calls)}`);
  m.tool_calls.forEach((c, k) => checkCall(c, names, `${what} tool_calls[${k}]`));
  eq(new Set(m.tool_calls.map((c) => c.id)).size, m.tool_calls.length, `${what} distinct tool call ids`);
  return m.tool_calls;
}

// A streamed chat completion, with the per-delta tool-call shape checked as it arrives.
async function streamTools(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  const calls = [];  // by index: {id, type, name, args}
  let content = '';
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      eq(c.index, 0, 'choice index');
      if (c.delta?.content) content += c.delta.content;
      for (const d of c.delta?.tool_calls ?? []) {
        assert(Number.isInteger(d.index) && d.index >= 0, `delta without an index: ${JSON.stringify(d)}`);
        if (!calls[d.index]) {
          assert(d.index === calls.length, `tool call index ${d.index} skips ${calls.length}`);
          assert(typeof d.id === 'string' && d.id.length > 0, `first delta of call ${d.index} has no id: ${JSON.stringify(d)}`);
          eq(d.type, 'function', `first delta of call ${d.index} type`);
          assert(typeof d.function?.name === 'string' && d.function.name.length > 0, `first delta of call ${d.index} has no function.name: ${JSON.stringify(d)}`);
          calls[d.index] = { id: d.id, type: d.type, name: d.function.name, args: '' };
        } else {
          assert(d.id === undefined || d.id === calls[d.index].id, `call ${d.index} id changed: ${JSON.stringify(d)}`);
          assert(d.function?.name === undefined || d.function.name === calls[d.index].name, `call ${d.index} name changed`);
        }
        if (d.function?.arguments !== undefined) {
          eq(typeof d.function.arguments, 'string', 'arguments fragment type');
          calls[d.index].args += d.function.arguments;
        }
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { calls, content, finish };
}

function expect400(e, keyword, what) {
  assert(e instanceof OpenAI.BadRequestError, `${what}: not a BadRequestError: ${e}`);
  eq(e.status, 400, `${what} status`);
  const msg = `${e.message} ${e.error?.message ?? ''}`;
  assert(msg.includes(keyword), `${what}: the message does not name '${keyword}': ${msg}`);
}

// ==== openai SDK ========================================================================================
await check('models.list', async () => {
  const page = await client.models.list();
  assert(page.data.length >= 1, 'no models');
  model = page.data[0].id;
});

const SCHEMA_FORMAT = { type: 'json_schema', json_schema: { name: 'weather', schema: WEATHER, strict: true } };
let schemaContent = null;

await check('openai: response_format json_schema (temperature 0 and 3 sampled seeds)', async () => {
  const r = await client.chat.completions.create({ model, messages: ASK, response_format: SCHEMA_FORMAT, max_tokens: MAX, temperature: 0 });
  eq(r.choices[0].finish_reason, 'stop', 'finish_reason');
  eq(r.choices[0].message.tool_calls?.length ?? 0, 0, 'no tool calls');
  schemaContent = r.choices[0].message.content;
  parseValid(schemaContent, WEATHER, 'content');
  for (const seed of [1, 2, 3]) {
    const s = await client.chat.completions.create({ model, messages: ASK, response_format: SCHEMA_FORMAT, max_tokens: MAX, temperature: 1.0, seed });
    eq(s.choices[0].finish_reason, 'stop', `seed ${seed} finish_reason`);
    parseValid(s.choices[0].message.content, WEATHER, `seed ${seed} content`);
  }
});

await check('openai: response_format json_schema streamed (== non-stream at temperature 0)', async () => {
  const stream = await client.chat.completions.create({ model, messages: ASK, response_format: SCHEMA_FORMAT, max_tokens: MAX, temperature: 0, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      if (c.delta?.content) text += c.delta.content;
      assert(!c.delta?.tool_calls, 'tool_calls delta in a json_schema answer');
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  eq(finish, 'stop', 'finish_reason');
  parseValid(text, WEATHER, 'streamed content');
  if (schemaContent !== null) eq(text, schemaContent, 'streamed content vs non-stream');
});

await check('openai: response_format json_object gives a JSON object (a valid prefix when cut by max_tokens)', async () => {
  const messages = [{ role: 'system', content: 'Reply with a JSON object.' }, ...ASK];
  for (const [temperature, seed] of [[0, undefined], [1.0, 5], [1.0, 6]]) {
    const r = await client.chat.completions.create({ model, messages, response_format: { type: 'json_object' }, max_tokens: MAX, temperature, seed });
    const c = r.choices[0];
    const text = c.message.content ?? '';
    const complete = jsonObjectPrefix(text);
    if (c.finish_reason === 'stop') {
      assert(complete, `finish_reason stop but the object is unfinished: ${JSON.stringify(text)}`);
      const v = JSON.parse(text);
      assert(v !== null && typeof v === 'object' && !Array.isArray(v), `not an object: ${text}`);
    } else {
      eq(c.finish_reason, 'length', `finish_reason (temperature ${temperature})`);
      assert(r.usage.completion_tokens === MAX, `length with ${r.usage.completion_tokens} tokens`);
    }
  }
});

await check('openai: unsupported JSON Schema keywords are 400 naming the keyword under strict', async () => {
  const cases = [
    ['patternProperties', { type: 'object', patternProperties: { '^x': { type: 'string' } } }],
    ['not', { type: 'object', properties: { v: { not: { type: 'string' } } }, required: ['v'] }],
  ];
  for (const [keyword, schema] of cases) {
    let err = null;
    try {
      await client.chat.completions.create({ model, messages: ASK, max_tokens: 8,
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } } });
    } catch (e) {
      err = e;
    }
    assert(err, `${keyword}: no error`);
    expect400(err, keyword, `response_format with ${keyword}`);
  }
});

await check('openai: pattern is enforced in a json_schema reply', async () => {
  const schema = { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}$' } }, required: ['code'] };
  const r = await client.chat.completions.create({ model, messages: ASK, max_tokens: MAX, temperature: 0,
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } } });
  const c = r.choices[0];
  if (c.finish_reason === 'length') return;  // a cut reply is reported as such, never as valid JSON
  const v = JSON.parse(c.message.content);
  assert(/^[A-Z]{3}$/.test(v.code), `code ${JSON.stringify(v.code)} does not match the pattern`);
});

await check('openai: tool parameters: pattern enforced, an unsupported keyword relaxed (not a 400)', async () => {
  const withPattern = { type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { code: { type: 'string', pattern: '^[0-9]+$' } }, required: ['code'] } } };
  const r = await client.chat.completions.create({ model, messages: ASK, max_tokens: MAX, temperature: 0, tools: [withPattern], tool_choice: 'required' });
  const c = r.choices[0];
  if (c.finish_reason !== 'length') {
    assert(c.finish_reason === 'tool_calls', `finish_reason ${c.finish_reason}`);
    const args = JSON.parse(c.message.tool_calls[0].function.arguments);
    assert(/^[0-9]+$/.test(args.code), `code ${JSON.stringify(args.code)} does not match the pattern`);
  }
  const withNot = { type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { v: { not: { type: 'string' } } } } } };
  const r2 = await client.chat.completions.create({ model, messages: ASK, max_tokens: 8, tools: [withNot], tool_choice: 'required' });
  assert(r2.choices.length === 1, 'no choice');
});

let namedCall = null;
await check('openai: tool_choice {function: get_weather} forces a valid call', async () => {
  const r = await client.chat.completions.create({ model, messages: ASK, tools: [weatherTool, timeTool],
    tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: MAX, temperature: 0 });
  const calls = checkToolChoice(r.choices[0], ['get_weather'], 'named');
  namedCall = calls[0];
});

await check('openai: tool_choice required with two tools (temperature 0 and 3 sampled seeds)', async () => {
  const names = ['get_weather', 'get_time'];
  const seen = new Set();
  for (const [temperature, seed] of [[0, undefined], [1.0, 1], [1.0, 2], [1.0, 3]]) {
    const r = await client.chat.completions.create({ model, messages: ASK, tools: [weatherTool, timeTool],
      tool_choice: 'required', max_tokens: MAX, temperature, seed });
    for (const c of checkToolChoice(r.choices[0], names, `required (temperature ${temperature}, seed ${seed})`)) seen.add(c.function.name);
  }
  console.log(`     (tools called: ${[...seen].join(', ')})`);
});

await check('openai: parallel_tool_calls false gives exactly one call', async () => {
  for (const seed of [1, 2, 3, 4]) {
    const r = await client.chat.completions.create({ model, messages: ASK, tools: [weatherTool, timeTool],
      tool_choice: 'required', parallel_tool_calls: false, max_tokens: MAX, temperature: 1.0, seed });
    const calls = checkToolChoice(r.choices[0], ['get_weather', 'get_time'], `seed ${seed}`);
    eq(calls.length, 1, `seed ${seed} number of calls`);
  }
});

await check('openai: forced tool call streamed (delta shape; arguments == non-stream)', async () => {
  const params = { model, messages: ASK, tools: [weatherTool, timeTool],
    tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: MAX, temperature: 0 };
  const s = await streamTools(params);
  eq(s.finish, 'tool_calls', 'finish_reason');
  eq(s.content, '', 'streamed content');
  assert(s.calls.length >= 1, 'no streamed tool call');
  s.calls.forEach((c, k) => {
    eq(c.name, 'get_weather', `call ${k} name`);
    parseValid(c.args, WEATHER, `call ${k} concatenated arguments`);
  });
  if (namedCall) {
    eq(s.calls[0].name, namedCall.function.name, 'name vs non-stream');
    deepEq(JSON.parse(s.calls[0].args), JSON.parse(namedCall.function.arguments), 'arguments vs non-stream');
  }
  // The SDK's own accumulator (ChatCompletionStream) must rebuild the same call.
  const runner = client.chat.completions.stream(params);
  const final = await runner.finalChatCompletion();
  const calls = checkToolChoice(final.choices[0], ['get_weather'], 'ChatCompletionStream');
  deepEq(JSON.parse(calls[0].function.arguments), JSON.parse(s.calls[0].args), 'ChatCompletionStream arguments');
});

await check('openai: tool_choice auto (text or valid calls; finish_reason agrees)', async () => {
  for (const seed of [1, 2]) {
    const r = await client.chat.completions.create({ model, messages: ASK, tools: [weatherTool, timeTool],
      tool_choice: 'auto', max_tokens: MAX, temperature: 1.0, seed });
    const c = r.choices[0];
    if (c.message.tool_calls?.length) checkToolChoice(c, ['get_weather', 'get_time'], `auto seed ${seed}`);
    else assert(['stop', 'length'].includes(c.finish_reason), `auto seed ${seed} finish_reason ${c.finish_reason} without calls`);
  }
});

await check('openai: tool_choice none gives text, no calls', async () => {
  const r = await client.chat.completions.create({ model, messages: ASK, tools: [weatherTool, timeTool],
    tool_choice: 'none', max_tokens: 24, temperature: 0 });
  const c = r.choices[0];
  eq(c.message.tool_calls?.length ?? 0, 0, 'tool_calls');
  eq(typeof c.message.content, 'string', 'content type');
  assert(['stop', 'length'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
});

// Tool call ids are what a client echoes back in tool messages (tool_call_id): within one response
// they must not repeat, also across the choices of n > 1 (with or without a seed).
await check('openai: n: 2 forced calls have distinct ids across choices (seeded and not)', async () => {
  for (const seed of [3, undefined]) {
    const r = await client.chat.completions.create({ model, messages: ASK, tools: [weatherTool, timeTool],
      tool_choice: 'required', n: 2, max_tokens: MAX, temperature: 1.0, seed });
    eq(r.choices.length, 2, 'choices');
    const ids = r.choices.flatMap((c, k) => checkToolChoice(c, ['get_weather', 'get_time'], `seed ${seed} choice ${k}`).map((t) => t.id));
    eq(new Set(ids).size, ids.length, `seed ${seed}: distinct ids in ${JSON.stringify(ids)}`);
  }
});

await check('openai: tool round trip (/apply-template renders <tool_call> and <tool_response>; 200)', async () => {
  const args = { city: 'Paris', unit: 'c', days: 3 };
  const result = '{"temp_c": 18, "sky": "clear"}';
  const messages = [
    ...ASK,
    { role: 'assistant', content: null,
      tool_calls: [{ id: 'call_abc123', type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(args) } }] },
    { role: 'tool', tool_call_id: 'call_abc123', content: result },
  ];
  const res = await fetch(`${rootURL}/apply-template`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model, messages, tools: [weatherTool, timeTool] }),
  });
  const body = await res.text();
  eq(res.status, 200, `/apply-template status (${body})`);
  const prompt = JSON.parse(body).prompt;
  eq(typeof prompt, 'string', 'prompt');
  // Qwen2.5's template: the tools as JSON lines inside <tools></tools> in the system turn (its
  // instructions also mention "<tools></tools>" and show a non-JSON <tool_call> example, hence the scans).
  const toolBlocks = [...prompt.matchAll(/<tools>([\s\S]*?)<\/tools>/g)].map((m) => m[1]);
  assert(toolBlocks.some((b) => b.includes('"get_weather"') && b.includes('"get_time"')), `no <tools> block with both tools in:\n${prompt}`);
  // The assistant's call: {"name": ..., "arguments": {...}} with the arguments as an object, not a string.
  const calls = [...prompt.matchAll(/<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g)].flatMap((m) => {
    try { return [{ at: m.index, payload: JSON.parse(m[1]) }]; } catch { return []; }
  });
  eq(calls.length, 1, `JSON <tool_call> blocks in:\n${prompt}\n`);
  eq(calls[0].payload.name, 'get_weather', '<tool_call> name');
  deepEq(calls[0].payload.arguments, args, '<tool_call> arguments');
  const resp = [...prompt.matchAll(/<tool_response>\s*([\s\S]*?)\s*<\/tool_response>/g)];
  eq(resp.length, 1, `<tool_response> blocks in:\n${prompt}\n`);
  eq(resp[0][1], result, '<tool_response> content');
  assert(calls[0].at < resp[0].index, 'the <tool_call> comes after the <tool_response>');
  assert(prompt.trimEnd().endsWith('<|im_start|>assistant'), `no generation prompt at the end:\n${prompt.slice(-200)}`);

  const r = await client.chat.completions.create({ model, messages, tools: [weatherTool, timeTool], max_tokens: 16, temperature: 0 });
  eq(r.object, 'chat.completion', 'object');
  assert(r.choices.length === 1 && r.choices[0].message.role === 'assistant', 'one assistant choice');
  assert(r.usage.prompt_tokens > 0, 'usage.prompt_tokens');
});

// ==== LangChain JS ======================================================================================
const lc = new ChatOpenAI({ model: 'anelm', apiKey, configuration: { baseURL }, temperature: 0, maxTokens: 300, maxRetries: 0 });
const LC_ASK = 'What is the weather in Paris for the next 3 days? Answer in JSON.';

await check('langchain: bindTools with tool_choice get_weather', async () => {
  const r = await lc.bindTools([weatherTool, timeTool], { tool_choice: 'get_weather' }).invoke(LC_ASK);
  assert(r.tool_calls?.length >= 1, `no tool_calls: ${JSON.stringify(r)}`);
  eq((r.invalid_tool_calls ?? []).length, 0, 'invalid_tool_calls');
  eq(r.tool_calls[0].name, 'get_weather', 'tool name');
  assert(typeof r.tool_calls[0].id === 'string' && r.tool_calls[0].id.length > 0, 'tool call id');
  zValid(r.tool_calls[0].args, 'args');
  eq(r.response_metadata?.finish_reason, 'tool_calls', 'finish_reason');
});

await check('langchain: bindTools streamed (tool_call_chunks concatenate to a valid call)', async () => {
  let agg = null;
  for await (const chunk of await lc.bindTools([weatherTool, timeTool], { tool_choice: 'get_weather' }).stream(LC_ASK)) {
    agg = agg === null ? chunk : agg.concat(chunk);
  }
  assert(agg?.tool_calls?.length >= 1, `no tool_calls: ${JSON.stringify(agg?.tool_call_chunks)}`);
  eq((agg.invalid_tool_calls ?? []).length, 0, 'invalid_tool_calls');
  eq(agg.tool_calls[0].name, 'get_weather', 'tool name');
  zValid(agg.tool_calls[0].args, 'args');
});

await check('langchain: bindTools with tool_choice required (two tools)', async () => {
  const r = await lc.bindTools([weatherTool, timeTool], { tool_choice: 'required' }).invoke(LC_ASK);
  assert(r.tool_calls?.length >= 1, 'no tool_calls');
  eq((r.invalid_tool_calls ?? []).length, 0, 'invalid_tool_calls');
  for (const c of r.tool_calls) {
    assert(c.name in SCHEMA_OF, `tool name ${c.name}`);
    validate(c.args, SCHEMA_OF[c.name], `${c.name} args`);
  }
});

await check('langchain: withStructuredOutput(zod, jsonSchema)', async () => {
  const v = await lc.withStructuredOutput(zWeather, { name: 'weather', method: 'jsonSchema' }).invoke(LC_ASK);
  zValid(v, 'structured output');
});

await check('langchain: withStructuredOutput(zod, functionCalling)', async () => {
  const v = await lc.withStructuredOutput(zWeather, { name: 'weather', method: 'functionCalling' }).invoke(LC_ASK);
  zValid(v, 'structured output');
});

await check('langchain: tool round trip (AIMessage tool_calls + ToolMessage) is accepted', async () => {
  const msgs = [
    new HumanMessage(LC_ASK),
    new AIMessage({ content: '', tool_calls: [{ id: 'call_lc1', name: 'get_weather', args: { city: 'Paris', unit: 'c', days: 3 }, type: 'tool_call' }] }),
    new ToolMessage({ tool_call_id: 'call_lc1', content: '{"temp_c": 18}' }),
  ];
  const r = await new ChatOpenAI({ model: 'anelm', apiKey, configuration: { baseURL }, temperature: 0, maxTokens: 16, maxRetries: 0 })
    .bindTools([weatherTool, timeTool]).invoke(msgs);
  assert(AIMessage.isInstance(r), `not an AIMessage: ${r?.constructor?.name}`);
  assert(r.usage_metadata?.input_tokens > 0, 'usage input_tokens');
});

// jsonMode sends only response_format {type: json_object}: the server guarantees some JSON object,
// not the zod schema's. LangChain then parses the content with a StructuredOutputParser (JSON.parse +
// zod), which throws an OutputParserException (lc_error_code OUTPUT_PARSING_FAILURE) when the object
// does not match the schema or when max_tokens cut it. So: either a schema-valid object, or that
// parse/validation error; an HTTP error (an APIError with a status, e.g. 400) is a failure.
await check('langchain: withStructuredOutput(zod, jsonMode) (valid object or a parse error, never HTTP)', async () => {
  let v;
  try {
    v = await lc.withStructuredOutput(zWeather, { name: 'weather', method: 'jsonMode' }).invoke(LC_ASK);
  } catch (e) {
    assert(e?.status === undefined, `HTTP error ${e?.status}: ${e?.message}`);
    assert(e?.lc_error_code === 'OUTPUT_PARSING_FAILURE' || e?.name === 'OutputParserException',
           `not an output parsing error: ${e?.name}: ${e?.message}`);
    console.log('     (jsonMode: the object did not match the zod schema, as allowed)');
    return;
  }
  zValid(v, 'structured output');
});

// ==== Vercel AI SDK =====================================================================================
const sent = [];  // request bodies, to see what the provider sent
const provider = createOpenAICompatible({
  name: 'anelm', baseURL, apiKey, supportsStructuredOutputs: true,
  fetch: async (url, init) => {
    if (init?.body) sent.push(JSON.parse(init.body));
    return fetch(url, init);
  },
});
const aiWeather = tool({ description: 'Weather forecast for a city.', inputSchema: zWeather });
const aiTime = tool({ description: 'Current time in a zone.',
  inputSchema: z.object({ zone: z.enum(['utc', 'cet', 'pst']), exact: z.boolean() }) });
const aiParams = {
  model: provider('anelm'), prompt: LC_ASK, tools: { get_weather: aiWeather, get_time: aiTime },
  toolChoice: { type: 'tool', toolName: 'get_weather' }, maxOutputTokens: 300, temperature: 0, maxRetries: 0,
};

await check('ai-sdk: generateText with toolChoice get_weather', async () => {
  const r = await generateText(aiParams);
  deepEq(sent.at(-1)?.tool_choice, { type: 'function', function: { name: 'get_weather' } }, 'sent tool_choice');
  eq(r.finishReason, 'tool-calls', 'finishReason');
  assert(r.toolCalls.length >= 1, 'no toolCalls');
  const c = r.toolCalls[0];
  assert(!c.invalid, `invalid tool call: ${c.error}`);
  eq(c.toolName, 'get_weather', 'toolName');
  assert(typeof c.toolCallId === 'string' && c.toolCallId.length > 0, 'toolCallId');
  zValid(c.input, 'input');
});

await check('ai-sdk: streamText with toolChoice get_weather', async () => {
  const r = streamText({ ...aiParams, onError: () => {} });
  const calls = [];
  const inputs = new Map();  // tool-input id -> concatenated deltas
  let finish = null;
  for await (const part of r.fullStream) {
    if (part.type === 'error') throw part.error instanceof Error ? part.error : new Error(JSON.stringify(part.error));
    if (part.type === 'tool-input-start') inputs.set(part.id, '');
    if (part.type === 'tool-input-delta') inputs.set(part.id, (inputs.get(part.id) ?? '') + part.delta);
    if (part.type === 'tool-call') calls.push(part);
    if (part.type === 'finish') finish = part.finishReason;
  }
  eq(finish, 'tool-calls', 'finishReason');
  assert(calls.length >= 1, 'no tool-call part');
  for (const c of calls) {
    assert(!c.invalid, `invalid tool call: ${c.error}`);
    eq(c.toolName, 'get_weather', 'toolName');
    zValid(c.input, 'input');
    if (inputs.has(c.toolCallId)) deepEq(JSON.parse(inputs.get(c.toolCallId)), c.input, 'tool-input deltas vs input');
  }
});

// AI SDK 6+ structured output: generateText with Output.object (generateObject is deprecated).
await check('ai-sdk: generateText with Output.object (json_schema)', async () => {
  const r = await generateText({ model: provider('anelm'), output: Output.object({ schema: zWeather, name: 'weather' }),
    prompt: LC_ASK, maxOutputTokens: 400, temperature: 0, maxRetries: 0 });
  eq(sent.at(-1)?.response_format?.type, 'json_schema', 'sent response_format.type');
  eq(sent.at(-1)?.response_format?.json_schema?.name, 'weather', 'sent json_schema.name');
  eq(r.finishReason, 'stop', 'finishReason');
  zValid(r.output, 'output');
});

await check('ai-sdk: tool round trip (tool-call + tool-result messages) is accepted', async () => {
  const r = await generateText({
    model: provider('anelm'), tools: { get_weather: aiWeather, get_time: aiTime }, maxOutputTokens: 16, temperature: 0, maxRetries: 0,
    messages: [
      { role: 'user', content: LC_ASK },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_ai1', toolName: 'get_weather', input: { city: 'Paris', unit: 'c', days: 3 } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_ai1', toolName: 'get_weather', output: { type: 'json', value: { temp_c: 18 } } }] },
    ],
  });
  const body = sent.at(-1);
  eq(body?.messages?.[1]?.tool_calls?.[0]?.id, 'call_ai1', 'sent assistant tool_calls');
  eq(body?.messages?.[2]?.role, 'tool', 'sent tool message');
  assert(r.usage.inputTokens > 0, 'usage inputTokens');
});

finish();
