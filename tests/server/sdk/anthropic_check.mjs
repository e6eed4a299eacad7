// Checks a running anelm server's Anthropic Messages API (POST /v1/messages, /v1/messages/count_tokens)
// with the official @anthropic-ai/sdk: Message objects, the SDK's stream accumulator (MessageStream)
// against the non-streamed answer, forced tool use and a tool_result round trip, stop sequences,
// countTokens and the error mapping. Meant for a chat model with a tool-call syntax (run_all.sh runs it
// for the tiny qwen2 model with the Qwen2.5 tokenizer and template).
//
// The model has random weights: its text is noise. Checks assert what the server ENFORCES (shapes,
// grammar-forced tool calls, stop sequences, determinism at temperature 0 / top_k 1, errors).
//
// Usage: node anthropic_check.mjs BASE_URL   (BASE_URL like http://127.0.0.1:8080/v1). Prints 'N passed, M failed'.
import { check, assert, eq, deepEq, finish, validWeather, WEATHER } from './harness.mjs';
import Anthropic from '@anthropic-ai/sdk';

const baseURL = process.argv[2];
if (!baseURL) {
  console.error('usage: node anthropic_check.mjs BASE_URL');
  process.exit(2);
}
// The SDK appends /v1/messages itself.
const rootURL = baseURL.replace(/\/v1\/?$/, '');
const client = new Anthropic({ baseURL: rootURL, apiKey: process.env.ANELM_API_KEY || 'none', maxRetries: 0, timeout: 120000 });
const model = 'anelm';

const GREEDY = { temperature: 0, top_k: 1 };
const ASK = [{ role: 'user', content: 'What is the weather in Paris for the next 3 days?' }];
const TOOLS = [
  { name: 'get_weather', description: 'Weather forecast for a city.', input_schema: WEATHER },
  { name: 'get_time', description: 'Current time.', input_schema: { type: 'object', properties: {} } },
];

function checkMessage(m, what) {
  assert(typeof m.id === 'string' && m.id.startsWith('msg_'), `${what}.id ${m.id}`);
  eq(m.type, 'message', `${what}.type`);
  eq(m.role, 'assistant', `${what}.role`);
  assert(Array.isArray(m.content), `${what}.content not an array`);
  for (const b of m.content) assert(['text', 'thinking', 'tool_use'].includes(b.type), `${what}: block type ${b.type}`);
  assert(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use'].includes(m.stop_reason), `${what}.stop_reason ${m.stop_reason}`);
  assert(Number.isInteger(m.usage.input_tokens) && m.usage.input_tokens > 0, `${what}.usage.input_tokens ${m.usage.input_tokens}`);
  assert(Number.isInteger(m.usage.output_tokens), `${what}.usage.output_tokens ${m.usage.output_tokens}`);
}

const textOf = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
// What must agree between two answers to the same request: all but the id and how the prompt splits
// between input and cache_read tokens (the second request hits the prefix cache).
const answer = (m) => ({ type: m.type, role: m.role, model: m.model, content: m.content, stop_reason: m.stop_reason,
  stop_sequence: m.stop_sequence, prompt: m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0),
  output_tokens: m.usage.output_tokens });

let plain = null;
await check('anthropic: messages.create (Message object, usage == countTokens)', async () => {
  plain = await client.messages.create({ model, max_tokens: 24, system: 'Be brief.', messages: ASK, ...GREEDY });
  checkMessage(plain, 'create');
  const count = await client.messages.countTokens({ model, system: 'Be brief.', messages: ASK });
  eq(plain.usage.input_tokens + (plain.usage.cache_read_input_tokens ?? 0), count.input_tokens, 'input tokens vs countTokens');
  assert(plain.usage.output_tokens <= 24, `output_tokens ${plain.usage.output_tokens} > max_tokens`);
  if (plain.stop_reason === 'max_tokens') eq(plain.usage.output_tokens, 24, 'output_tokens at max_tokens');
});

await check('anthropic: streamed finalMessage == non-streamed (temperature 0, top_k 1)', async () => {
  const stream = client.messages.stream({ model, max_tokens: 24, system: 'Be brief.', messages: ASK, ...GREEDY });
  const events = [];
  stream.on('streamEvent', (e) => events.push(e.type));
  const final = await stream.finalMessage();
  checkMessage(final, 'finalMessage');
  deepEq(answer(final), answer(plain), 'streamed vs non-streamed message');
  eq(events[0], 'message_start', 'first event');
  eq(events.at(-1), 'message_stop', 'last event');
  assert(events.includes('content_block_start') && events.includes('content_block_stop'), `events ${events}`);
});

await check('anthropic: raw stream event order (create with stream: true)', async () => {
  const s = await client.messages.create({ model, max_tokens: 8, messages: ASK, stream: true, ...GREEDY });
  const seen = [];
  let open = false;
  for await (const e of s) {
    seen.push(e.type);
    if (e.type === 'content_block_start') { assert(!open, 'nested block'); open = true; }
    if (e.type === 'content_block_stop') { assert(open, 'stop without start'); open = false; }
    if (e.type === 'message_delta') assert(!open, 'message_delta inside a block');
  }
  eq(seen[0], 'message_start', 'first');
  eq(seen.at(-2), 'message_delta', 'second to last');
  eq(seen.at(-1), 'message_stop', 'last');
});

await check('anthropic: stop_sequences (stop_reason stop_sequence, the matched string, text before it)', async () => {
  const full = textOf(await client.messages.create({ model, max_tokens: 32, messages: ASK, ...GREEDY }));
  const chars = [...full];
  assert(chars.length >= 8, `reply too short for the check: ${JSON.stringify(full)}`);
  const stop = chars.slice(4, 7).join('');
  const cut = full.indexOf(stop);
  const r = await client.messages.create({ model, max_tokens: 32, messages: ASK, stop_sequences: ['\u0001never', stop], ...GREEDY });
  eq(r.stop_reason, 'stop_sequence', 'stop_reason');
  eq(r.stop_sequence, stop, 'stop_sequence');
  eq(textOf(r), full.slice(0, cut), 'text before the stop sequence');
  const final = await client.messages.stream({ model, max_tokens: 32, messages: ASK, stop_sequences: [stop], ...GREEDY }).finalMessage();
  eq(final.stop_sequence, stop, 'streamed stop_sequence');
  eq(textOf(final), textOf(r), 'streamed text');
});

let forced = null;
await check('anthropic: tool_choice {type: tool} forces a valid tool_use (non-streamed and streamed)', async () => {
  const params = { model, max_tokens: 400, messages: ASK, tools: TOOLS, tool_choice: { type: 'tool', name: 'get_weather' }, ...GREEDY };
  forced = await client.messages.create(params);
  checkMessage(forced, 'forced');
  eq(forced.stop_reason, 'tool_use', 'stop_reason');
  const uses = forced.content.filter((b) => b.type === 'tool_use');
  assert(uses.length >= 1, `no tool_use: ${JSON.stringify(forced.content)}`);
  eq(uses[0].name, 'get_weather', 'name');
  assert(typeof uses[0].id === 'string' && uses[0].id.length > 0, 'tool_use id');
  validWeather(uses[0].input, 'tool_use.input');
  const final = await client.messages.stream(params).finalMessage();
  const suses = final.content.filter((b) => b.type === 'tool_use');
  eq(final.stop_reason, 'tool_use', 'streamed stop_reason');
  deepEq(suses.map((b) => [b.name, b.input]), uses.map((b) => [b.name, b.input]), 'streamed tool_use (input from input_json_delta)');
});

await check('anthropic: tool_choice any with disable_parallel_tool_use gives exactly one call', async () => {
  const r = await client.messages.create({ model, max_tokens: 400, messages: ASK, tools: TOOLS,
    tool_choice: { type: 'any', disable_parallel_tool_use: true }, ...GREEDY });
  eq(r.stop_reason, 'tool_use', 'stop_reason');
  eq(r.content.filter((b) => b.type === 'tool_use').length, 1, 'tool_use blocks');
});

await check('anthropic: tool_result round trip (the result reaches the prompt; is_error accepted)', async () => {
  assert(forced, 'needs the forced call');
  const use = forced.content.find((b) => b.type === 'tool_use');
  const turn = (result) => [...ASK, { role: 'assistant', content: forced.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, ...result }] }];
  const short = await client.messages.countTokens({ model, messages: turn({ content: '21C' }), tools: TOOLS });
  const long = await client.messages.countTokens({ model, messages: turn({ content: [{ type: 'text', text: '21C, sunny, light wind from the west' }] }), tools: TOOLS });
  assert(long.input_tokens > short.input_tokens, `tool_result text not rendered: ${short.input_tokens} vs ${long.input_tokens}`);
  const r = await client.messages.create({ model, max_tokens: 8, messages: turn({ content: 'timeout', is_error: true }), tools: TOOLS, ...GREEDY });
  checkMessage(r, 'turn 2');
  // claude's shape: a system turn inside messages, cache_control and metadata are accepted.
  const c = await client.messages.create({ model, max_tokens: 4, metadata: { user_id: 'u' },
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
      { role: 'system', content: 'env: linux' }] });
  checkMessage(c, 'system turn');
});

await check('anthropic: errors map to the SDK classes with Anthropic error types', async () => {
  let err = null;
  try {
    await client.messages.create({ model, max_tokens: 8, messages: [{ role: 'user', content: [
      { type: 'text', text: 'look' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }] });
  } catch (e) {
    err = e;
  }
  assert(err instanceof Anthropic.BadRequestError, `not a BadRequestError: ${err}`);
  eq(err.status, 400, 'status');
  eq(err.error?.type, 'error', 'body type');
  eq(err.error?.error?.type, 'invalid_request_error', 'error type');
  assert(String(err.error?.error?.message).includes('messages[0].content[1].type'), `message: ${err.message}`);
  let tc = null;
  try {
    await client.messages.create({ model, max_tokens: 8, messages: ASK, tools: TOOLS, tool_choice: { type: 'tool', name: 'nope' } });
  } catch (e) {
    tc = e;
  }
  assert(tc instanceof Anthropic.BadRequestError, `tool_choice: ${tc}`);
});

finish();
