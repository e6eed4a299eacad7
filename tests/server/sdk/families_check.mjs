// One tool-call round trip through the official openai npm SDK for a model family whose chat template
// run_all.sh serves with --chat-template (Granite 3.3, Phi-4-mini, SmolLM3, Gemma): a named tool_choice
// forces a valid call in the template's own syntax (non-streamed and streamed), the call and its result
// go back as an assistant message with tool_calls and a tool message, the template renders both, and a
// final text answer comes back.
//
// The model is a tiny random-weight file of the family (anelm make-model, synthetic 512-token byte-level
// BPE), so its text is noise: forced calls are grammar-constrained (the markup, the name, an integer the
// schema bounds), and the final answer is asked with tool_choice "none", which a client may send and
// which makes the answer text by definition. What is checked is what the server enforces or renders.
//
// Usage: ANELM_SDK_SYNTAX=granite|phi4|generic node families_check.mjs BASE_URL
//   (BASE_URL like http://127.0.0.1:8080/v1; the syntax the served template must use). Prints 'N passed, M failed'.
import { check, assert, eq, deepEq, finish } from './harness.mjs';
import OpenAI from 'openai';

const baseURL = process.argv[2];
const syntax = process.env.ANELM_SDK_SYNTAX;
if (!baseURL || !['granite', 'phi4', 'generic'].includes(syntax)) {
  console.error('usage: ANELM_SDK_SYNTAX=granite|phi4|generic node families_check.mjs BASE_URL');
  process.exit(2);
}
const rootURL = baseURL.replace(/\/v1\/?$/, '');
const client = new OpenAI({ baseURL, apiKey: process.env.ANELM_API_KEY || 'none', maxRetries: 0, timeout: 120000 });
const model = (await client.models.list()).data[0].id;
const label = `${syntax} (${model})`;

async function applyTemplate(body) {
  const r = await fetch(rootURL + '/apply-template', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${process.env.ANELM_API_KEY || 'none'}` },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  assert(r.ok, `/apply-template: HTTP ${r.status}: ${text}`);
  return JSON.parse(text).prompt;
}

const TOOLS = [{
  type: 'function',
  function: {
    name: 'get_forecast',
    description: 'Weather forecast for the next days',
    parameters: { type: 'object', properties: { days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['days'], additionalProperties: false },
  },
}];
const ASK = [{ role: 'user', content: 'What is the forecast for the next three days?' }];
const MARKUP = ['<|tool_call|>', '<|/tool_call|>', '<tool_call>', '{"tool_calls"'];

function validArgs(args, what) {
  let v;
  try {
    v = JSON.parse(args);
  } catch (e) {
    throw new Error(`${what}: arguments are not JSON (${e.message}): ${JSON.stringify(args)}`);
  }
  deepEq(Object.keys(v ?? {}), ['days'], `${what} keys`);
  assert(Number.isInteger(v.days) && v.days >= 1 && v.days <= 7, `${what}.days ${JSON.stringify(v.days)}`);
  return v;
}

// Python's json.dumps (", " and ": " separators), as transformers' tojson prints.
function pyJson(v) {
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`;
  if (v && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pyJson(x)}`).join(', ')}}`;
  return JSON.stringify(v);
}

const forced = {
  model,
  messages: ASK,
  tools: TOOLS,
  tool_choice: { type: 'function', function: { name: 'get_forecast' } },
  max_tokens: 160,
  temperature: 0,
};
let call = null;

await check(`${label}: the template's tool syntax`, async () => {
  const prompt = await applyTemplate({ messages: ASK, tools: TOOLS });
  assert(prompt.includes('get_forecast'), `the tools are not in the prompt: ${prompt.slice(-800)}`);
  if (syntax === 'phi4') assert(prompt.includes('<|tool|>[{"name": "get_forecast"'), `no <|tool|> list: ${prompt.slice(0, 400)}`);
  if (syntax === 'granite') assert(prompt.includes('<|start_of_role|>available_tools<|end_of_role|>'), `no available_tools turn: ${prompt.slice(0, 600)}`);
  if (syntax === 'generic') assert(prompt.includes('reply with only {"tool_calls"'), `no generic instructions: ${prompt.slice(0, 600)}`);
});

await check(`${label}: a named tool_choice gives a valid call as tool_calls`, async () => {
  const r = await client.chat.completions.create(forced);
  const c = r.choices[0];
  const calls = c.message.tool_calls ?? [];
  eq(calls.length, 1, `calls (finish_reason ${c.finish_reason}, content ${JSON.stringify(c.message.content)})`);
  eq(c.finish_reason, 'tool_calls', 'finish_reason');
  eq(calls[0].type, 'function', 'type');
  assert(/^call_[A-Za-z0-9]{24}$/.test(calls[0].id), `id ${calls[0].id}`);
  eq(calls[0].function.name, 'get_forecast', 'name');
  validArgs(calls[0].function.arguments, 'arguments');
  assert(!c.message.content, `content beside the call: ${JSON.stringify(c.message.content)}`);
  call = calls[0];
});

await check(`${label}: the streamed named call assembles to the same call`, async () => {
  const stream = await client.chat.completions.create({ ...forced, stream: true });
  let id = null, name = null, args = '', content = '', finishReason = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    for (const ch of chunk.choices) {
      if (ch.delta?.content) content += ch.delta.content;
      for (const d of ch.delta?.tool_calls ?? []) {
        eq(d.index, 0, 'tool call index');
        if (d.id) { assert(id === null || id === d.id, 'id changed'); id = d.id; }
        if (d.function?.name) { assert(name === null, 'name sent twice'); name = d.function.name; }
        if (d.function?.arguments) args += d.function.arguments;
      }
      if (ch.finish_reason) finishReason = ch.finish_reason;
    }
  }
  assert(chunks > 1, `only ${chunks} chunk(s)`);
  eq(finishReason, 'tool_calls', 'finish_reason');
  eq(name, 'get_forecast', 'streamed name');
  assert(id, 'no id');
  const v = validArgs(args, 'streamed arguments');
  if (call) deepEq(v, JSON.parse(call.function.arguments), 'streamed vs non-streamed arguments (greedy)');
  eq(content, '', 'streamed content');
});

await check(`${label}: the tool result goes back as a tool message and a final answer comes back`, async () => {
  assert(call, 'no call from the named tool_choice check');
  const messages = [
    ...ASK,
    { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', tool_call_id: call.id, content: 'sun, rain, sun' },
  ];
  const prompt = await applyTemplate({ messages, tools: TOOLS });
  // The server's request parser reads the arguments as JSON; they are printed back as json.dumps does.
  const args = pyJson(JSON.parse(call.function.arguments));
  const rendered = {
    granite: `<|tool_call|>[{"name": "get_forecast", "arguments": ${args}}]`,
    phi4: `<|tool_call|>[{"name": "get_forecast", "arguments": ${args}}]<|/tool_call|>`,
    generic: `{"tool_calls": [{"name": "get_forecast", "arguments": ${args}}]}`,
  }[syntax];
  assert(prompt.includes(rendered), `the call is not rendered as ${rendered}: ${prompt.slice(-600)}`);
  assert(prompt.includes('sun, rain, sun'), `the result is not rendered: ${prompt.slice(-600)}`);
  const r = await client.chat.completions.create({ model, messages, tools: TOOLS, tool_choice: 'none', max_tokens: 8, temperature: 0 });
  const c = r.choices[0];
  assert(['stop', 'length'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
  assert(!c.message.tool_calls || c.message.tool_calls.length === 0, `tool_calls in the answer: ${JSON.stringify(c.message.tool_calls)}`);
  assert(typeof c.message.content === 'string' && c.message.content.length > 0, `no final answer: ${JSON.stringify(c.message)}`);
  for (const m of MARKUP) assert(!c.message.content.includes(m), `markup ${m} in the answer`);
  assert(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0, `usage ${JSON.stringify(r.usage)}`);
});

finish();
