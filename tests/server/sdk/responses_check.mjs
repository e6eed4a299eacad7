// Checks a running anelm server's OpenAI Responses API (POST /v1/responses, GET / DELETE
// /v1/responses/{id}) with the official openai npm SDK: client.responses.create streamed and not,
// the SDK's own stream accumulator (client.responses.stream -> finalResponse), a forced function
// call round trip continued by previous_response_id and by explicit items, retrieve / delete, and
// the errors. Meant for the tiny qwen2 model with the Qwen2.5 template (run_all.sh).
//
// The model has random weights: every check asserts what the server ENFORCES (shapes, forced and
// schema-valid calls, greedy determinism, the stored conversation), never what a sensible model
// would say.
//
// Usage: node responses_check.mjs BASE_URL   (BASE_URL like http://127.0.0.1:8080/v1).
import { check, assert, eq, deepEq, finish, validWeather, WEATHER } from './harness.mjs';
import OpenAI from 'openai';

const baseURL = process.argv[2];
if (!baseURL) {
  console.error('usage: node responses_check.mjs BASE_URL');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: process.env.ANELM_API_KEY || 'none', maxRetries: 0, timeout: 120000 });
let model = 'anelm';

const weatherTool = { type: 'function', name: 'get_weather', description: 'Weather forecast for a city.', parameters: WEATHER, strict: true };
const FORCE = { type: 'function', name: 'get_weather' };
const ASK = 'What is the weather in Paris for the next 3 days?';

// Function-call arguments are JSON text: parsed, then checked against WEATHER.
function validWeatherArgs(args, what) {
  let v;
  try {
    v = JSON.parse(args);
  } catch (e) {
    throw new Error(`${what}: arguments are not JSON: ${JSON.stringify(args)}`);
  }
  return validWeather(v, what);
}

function checkResponse(r, what) {
  eq(r.object, 'response', `${what}.object`);
  assert(r.id.startsWith('resp_'), `${what}.id ${r.id}`);
  assert(['completed', 'incomplete'].includes(r.status), `${what}.status ${r.status}`);
  if (r.status === 'incomplete') eq(r.incomplete_details?.reason, 'max_output_tokens', `${what}.incomplete_details`);
  eq(r.model, model, `${what}.model`);
  assert(Array.isArray(r.output) && r.output.length >= 1, `${what}.output`);
  const u = r.usage;
  assert(u.input_tokens > 0 && u.output_tokens >= 0, `${what}.usage ${JSON.stringify(u)}`);
  eq(u.total_tokens, u.input_tokens + u.output_tokens, `${what}.usage.total_tokens`);
  assert(typeof u.input_tokens_details?.cached_tokens === 'number', `${what}.usage.input_tokens_details`);
  assert(typeof u.output_tokens_details?.reasoning_tokens === 'number', `${what}.usage.output_tokens_details`);
}

// The items without their per-request ids, for comparing two answers.
const stripIds = (items) => items.map(({ id, call_id, ...rest }) => rest);

await check('models.list', async () => {
  const page = await client.models.list();
  model = page.data[0].id;
});

// ---- text ------------------------------------------------------------------------------------------
const TEXT = { input: 'Tell me a story.', instructions: 'You are terse.', max_output_tokens: 24, temperature: 0 };
let plain = null;

await check('responses.create: Response object, output_text, usage', async () => {
  plain = await client.responses.create({ model, ...TEXT });
  checkResponse(plain, 'response');
  const msg = plain.output.find((o) => o.type === 'message');
  assert(msg, 'a message item');
  eq(msg.role, 'assistant', 'message.role');
  eq(msg.content[0].type, 'output_text', 'content[0].type');
  eq(plain.output_text, msg.content.map((c) => c.text).join(''), 'output_text (SDK convenience)');
  eq(plain.instructions, TEXT.instructions, 'instructions echoed');
  eq(plain.max_output_tokens, TEXT.max_output_tokens, 'max_output_tokens echoed');
  eq(plain.store, true, 'store defaults to true');
});

await check('responses.create stream: events in order, deltas assemble to the non-streamed answer', async () => {
  const stream = await client.responses.create({ model, ...TEXT, stream: true });
  const types = [];
  let seq = -1;
  let text = '';
  let doneItems = [];
  let final = null;
  for await (const ev of stream) {
    types.push(ev.type);
    assert(ev.sequence_number === seq + 1, `sequence_number ${ev.sequence_number} after ${seq}`);
    seq = ev.sequence_number;
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.output_item.done') doneItems.push(ev.item);
    if (ev.type === 'response.completed' || ev.type === 'response.incomplete') final = ev.response;
  }
  deepEq(types.slice(0, 2), ['response.created', 'response.in_progress'], 'first events');
  assert(final, `no response.completed / response.incomplete in ${types}`);
  assert(types.includes('response.output_item.added') && types.includes('response.content_part.added') &&
         types.includes('response.output_text.done') && types.includes('response.content_part.done'), `events: ${types}`);
  if (plain) {
    eq(text, plain.output_text, 'streamed text vs non-streamed (temperature 0)');
    eq(final.status, plain.status, 'status');
    deepEq(stripIds(doneItems), stripIds(plain.output), 'output_item.done items vs non-streamed output');
    eq(final.usage.output_tokens, plain.usage.output_tokens, 'usage.output_tokens');
  }
  deepEq(final.output, doneItems, 'final response output == the output_item.done items');
});

await check('responses.stream (the SDK accumulator) gives the non-streamed answer', async () => {
  const stream = client.responses.stream({ model, ...TEXT });
  let deltas = '';
  stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
  const final = await stream.finalResponse();
  checkResponse(final, 'finalResponse');
  eq(deltas, final.output_text, 'deltas vs snapshot');
  if (plain) eq(final.output_text, plain.output_text, 'finalResponse.output_text vs non-streamed');
});

// ---- tools -----------------------------------------------------------------------------------------
let first = null;

await check('forced function call: a complete, schema-valid function_call item (streamed == not)', async () => {
  const params = { model, input: ASK, tools: [weatherTool, { type: 'web_search' }], tool_choice: FORCE,
                   max_output_tokens: 400, temperature: 0 };
  first = await client.responses.create(params);
  checkResponse(first, 'response');
  eq(first.status, 'completed', 'status');
  const calls = first.output.filter((o) => o.type === 'function_call');
  eq(calls.length, 1, `function_call items in ${JSON.stringify(first.output)}`);
  const c = calls[0];
  eq(c.name, 'get_weather', 'name');
  eq(c.status, 'completed', 'item status');
  assert(c.id.startsWith('fc_') && typeof c.call_id === 'string' && c.call_id.length > 0, `ids ${c.id} ${c.call_id}`);
  validWeatherArgs(c.arguments, 'arguments');

  const stream = client.responses.stream(params);
  let args = '';
  stream.on('response.function_call_arguments.delta', (e) => { args += e.delta; });
  const final = await stream.finalResponse();
  const sc = final.output.filter((o) => o.type === 'function_call');
  eq(sc.length, 1, 'streamed function_call items');
  eq(args, sc[0].arguments, 'argument deltas vs the item');
  eq(sc[0].arguments, c.arguments, 'streamed arguments vs non-streamed');
});

await check('round trip: previous_response_id equals the same conversation sent as items', async () => {
  assert(first, 'needs the forced call');
  const call = first.output.find((o) => o.type === 'function_call');
  const result = { type: 'function_call_output', call_id: call.call_id, output: '{"temp_c": 18, "sky": "clear"}' };
  const common = { model, tools: [weatherTool], max_output_tokens: 16, temperature: 0 };
  const cont = await client.responses.create({ ...common, previous_response_id: first.id, input: [result] });
  checkResponse(cont, 'continued');
  eq(cont.previous_response_id, first.id, 'previous_response_id echoed');
  assert(cont.usage.input_tokens > first.usage.input_tokens, 'the continuation carries the first turn');
  // The same conversation spelled out, not stored: the same prompt, hence (greedy) the same answer.
  const items = [{ role: 'user', content: ASK }, ...first.output, result];
  const explicit = await client.responses.create({ ...common, input: items, store: false });
  eq(explicit.usage.input_tokens, cont.usage.input_tokens, 'prompt tokens: stored history vs explicit items');
  eq(explicit.output_text, cont.output_text, 'answer: stored history vs explicit items');
  eq(explicit.store, false, 'store false echoed');
  // store: false is not retrievable; the stored one is, until deleted.
  await client.responses.retrieve(explicit.id).then(
    () => { throw new Error('a store: false response was retrievable'); },
    (e) => assert(e instanceof OpenAI.NotFoundError, `retrieve store:false: ${e}`));
});

await check('retrieve and delete', async () => {
  const r = await client.responses.create({ model, input: 'Hi', max_output_tokens: 8, temperature: 0 });
  const got = await client.responses.retrieve(r.id);
  deepEq(got.output, r.output, 'retrieved output');
  eq(got.id, r.id, 'retrieved id');
  await client.responses.delete(r.id);
  await client.responses.retrieve(r.id).then(
    () => { throw new Error('retrievable after delete'); },
    (e) => assert(e instanceof OpenAI.NotFoundError, `retrieve after delete: ${e}`));
});

// ---- errors ----------------------------------------------------------------------------------------
async function expectError(params, Kind, param, what) {
  try {
    await client.responses.create({ model, max_output_tokens: 8, ...params });
  } catch (e) {
    assert(e instanceof Kind, `${what}: ${e}`);
    if (param) eq(e.error?.param ?? e.param, param, `${what} param`);
    return;
  }
  throw new Error(`${what}: no error`);
}

await check('errors: unknown previous_response_id 404, image input / forced hosted tool / background 400', async () => {
  await expectError({ input: 'x', previous_response_id: 'resp_nope' }, OpenAI.NotFoundError, 'previous_response_id', 'unknown id');
  await expectError({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x/y.png' }] }] },
                    OpenAI.BadRequestError, 'input[0].content[0].type', 'image part');
  await expectError({ input: 'x', tools: [weatherTool, { type: 'web_search' }], tool_choice: { type: 'web_search' } },
                    OpenAI.BadRequestError, 'tools[1].type', 'forced web_search');
  await expectError({ input: 'x', background: true }, OpenAI.BadRequestError, 'background', 'background');
});

finish();
