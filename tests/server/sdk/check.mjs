// Checks a running anelm server with the official openai npm SDK: completions, chat, streaming,
// stream == non-stream at temperature 0, same seed => same text, and SDK error mapping.
// Usage: node check.mjs BASE_URL   (BASE_URL like http://127.0.0.1:8080/v1). Prints 'N passed, M failed'.
import { check, assert, eq, finish } from './harness.mjs';
import OpenAI from 'openai';

const baseURL = process.argv[2];
if (!baseURL) {
  console.error('usage: node check.mjs BASE_URL');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: process.env.ANELM_API_KEY || 'none', maxRetries: 0, timeout: 120000 });

const PROMPT = 'Once upon a time';
const MESSAGES = [{ role: 'user', content: 'Tell me a short story.' }];
let model = 'anelm';

async function streamCompletion(params) {
  const stream = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  const ids = new Set();
  for await (const chunk of stream) {
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, usage, ids };
}

// Streamed chat choices by index.
async function streamChatChoices(params) {
  const texts = [];
  for await (const chunk of await client.chat.completions.create(params)) {
    for (const c of chunk.choices) texts[c.index] = (texts[c.index] ?? '') + (c.delta?.content ?? '');
  }
  return texts;
}

async function streamChat(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  let firstRole = null;
  let n = 0;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (n++ === 0) firstRole = c.delta.role;
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, usage, firstRole };
}

await check('models.list', async () => {
  const page = await client.models.list();
  assert(page.data.length >= 1, 'no models');
  model = page.data[0].id;
  eq(page.data[0].object, 'model', 'object');
});

await check('completions.create', async () => {
  const r = await client.completions.create({ model, prompt: PROMPT, max_tokens: 16, temperature: 0 });
  eq(r.object, 'text_completion', 'object');
  assert(typeof r.choices[0].text === 'string' && r.choices[0].text.length > 0, 'empty text');
  assert(['stop', 'length'].includes(r.choices[0].finish_reason), `finish_reason ${r.choices[0].finish_reason}`);
  assert(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 16, 'usage.completion_tokens');
  eq(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens, 'total_tokens');
});

await check('completions stream == non-stream (temperature 0)', async () => {
  const params = { model, prompt: PROMPT, max_tokens: 24, temperature: 0 };
  const full = await client.completions.create(params);
  const s = await streamCompletion(params);
  eq(s.text, full.choices[0].text, 'streamed text');
  eq(s.finish, full.choices[0].finish_reason, 'finish_reason');
  eq(s.ids.size, 1, 'one id per stream');
  assert(s.usage && s.usage.completion_tokens === full.usage.completion_tokens, 'stream usage');
});

await check('completions same seed => same text', async () => {
  const params = { model, prompt: PROMPT, max_tokens: 24, temperature: 0.9, top_p: 0.95, seed: 42 };
  const a = await client.completions.create(params);
  const b = await client.completions.create(params);
  eq(b.choices[0].text, a.choices[0].text, 'seeded text');
  const s = await streamCompletion(params);
  eq(s.text, a.choices[0].text, 'seeded streamed text');
});

await check('completions stop string never emitted', async () => {
  const full = await client.completions.create({ model, prompt: PROMPT, max_tokens: 24, temperature: 0 });
  const text = full.choices[0].text;
  const stop = text.trim().slice(3, 6);
  if (stop.length < 2) return;  // nothing usable to stop on
  const r = await client.completions.create({ model, prompt: PROMPT, max_tokens: 24, temperature: 0, stop: [stop] });
  eq(r.choices[0].text, text.slice(0, text.indexOf(stop)), 'text before the stop');
  eq(r.choices[0].finish_reason, 'stop', 'finish_reason');
});

await check('chat.completions.create', async () => {
  const r = await client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 16, temperature: 0 });
  eq(r.object, 'chat.completion', 'object');
  eq(r.choices[0].message.role, 'assistant', 'role');
  assert(typeof r.choices[0].message.content === 'string', 'content');
  assert(['stop', 'length'].includes(r.choices[0].finish_reason), 'finish_reason');
});

await check('chat stream == non-stream (temperature 0)', async () => {
  const params = { model, messages: MESSAGES, max_completion_tokens: 24, temperature: 0 };
  const full = await client.chat.completions.create(params);
  const s = await streamChat(params);
  eq(s.firstRole, 'assistant', 'first delta role');
  eq(s.text, full.choices[0].message.content, 'streamed content');
  eq(s.finish, full.choices[0].finish_reason, 'finish_reason');
  assert(s.usage && s.usage.completion_tokens === full.usage.completion_tokens, 'stream usage');
});

await check('chat same seed => same text', async () => {
  const params = { model, messages: MESSAGES, max_tokens: 24, temperature: 1.0, seed: 7 };
  const a = await client.chat.completions.create(params);
  const b = await client.chat.completions.create(params);
  eq(b.choices[0].message.content, a.choices[0].message.content, 'seeded content');
});

await check('n: 2 gives two independent, reproducible choices', async () => {
  const params = { model, messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 12,
                   n: 2, seed: 11, temperature: 1.0 };
  const a = await client.chat.completions.create(params);
  eq(a.choices.length, 2, 'choices');
  eq(a.choices.map((c) => c.index).join(','), '0,1', 'indexes');
  const b = await client.chat.completions.create(params);
  eq(JSON.stringify(b.choices.map((c) => c.message.content)),
     JSON.stringify(a.choices.map((c) => c.message.content)), 'same seed, same choices');
  const total = a.choices.reduce((n, c) => n + (c.finish_reason === 'length' ? 12 : 0), 0);
  assert(a.usage.completion_tokens >= total, `usage counts every choice: ${a.usage.completion_tokens}`);
  const texts = await streamChatChoices({ ...params, stream: true });
  eq(JSON.stringify(texts), JSON.stringify(a.choices.map((c) => c.message.content)), 'streamed choices');
});

await check('over-long request is context_length_exceeded', async () => {
  try {
    await client.completions.create({ model, prompt: PROMPT, max_tokens: 10000000 });
  } catch (e) {
    eq(e.status, 400, 'status');
    assert(e.code === 'context_length_exceeded' || e.param === 'max_tokens', `code ${e.code}`);
    return;
  }
  throw new Error('no error');
});

finish();
