// Drives the chat page of two running `anelm serve` processes in headless Chromium (playwright-core,
// Debian's /usr/bin/chromium): one without an API key, one with. Started by run_webui.sh, which
// passes the servers and paths in the environment:
//   WEBUI_BASE        page of the server without a key (its model never ends a reply by itself)
//   WEBUI_KEY_BASE    page of the server started with --api-key WEBUI_API_KEY
//   WEBUI_SERVER_LOG  the first server's log (the request line of a stopped generation)
//   WEBUI_OUT         folder for the screenshots
//   CHROMIUM          the browser binary (default /usr/bin/chromium)
// Prints PASS/FAIL per check; exits 1 when any failed.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run this through run_webui.sh)`);
  return v;
};
const base = env('WEBUI_BASE');
const keyBase = env('WEBUI_KEY_BASE');
const apiKey = env('WEBUI_API_KEY');
const serverLog = env('WEBUI_SERVER_LOG');
const out = env('WEBUI_OUT');

let failed = 0;
let passed = 0;
async function check(name, fn) {
  const t0 = Date.now();
  try {
    const detail = await fn();
    passed++;
    console.log(`PASS ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)${detail ? `: ${detail}` : ''}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${String(e.message || e).split('\n').slice(0, 6).join('\n  ')}`);
  }
}
function expect(cond, what) {
  if (!cond) throw new Error(what);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  // root in a container: no user namespaces for the sandbox; a small /dev/shm.
  args: ['--no-sandbox', '--disable-dev-shm-usage'],
});

// Page errors and console errors (a Content-Security-Policy violation is one) fail the checks.
function watchErrors(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  return errors;
}

// Records, on every DOM change under #messages, the state and text length of the last reply.
async function recordUpdates(page) {
  await page.evaluate(() => {
    window.__updates = [];
    new MutationObserver(() => {
      const all = document.querySelectorAll('#messages article.msg.assistant');
      const last = all[all.length - 1];
      if (!last) return;
      window.__updates.push({ state: last.dataset.state, len: last.querySelector('.content').textContent.length });
    }).observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
  });
}
const updates = (page) => page.evaluate(() => window.__updates);
const lastReply = (page) => page.locator('#messages article.msg.assistant').last();

async function sendMessage(page, text) {
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
}

const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
const page = await context.newPage();
const errors = watchErrors(page);
let firstReply = '';
let stoppedLength = 0;

await check('page loads with the model and health shown', async () => {
  const res = await page.goto(`${base}/`);
  expect(res.status() === 200, `GET / answered ${res.status()}`);
  expect((res.headers()['content-security-policy'] || '').includes("default-src 'none'"), 'no CSP header on /');
  await page.waitForSelector('#health[data-state="ok"]', { timeout: 15000 });
  await page.waitForFunction(() => document.getElementById('model').textContent.includes('anelm-test'),
                             null, { timeout: 10000 });
  expect(errors.length === 0, errors.join('; '));
  return `model "${await page.textContent('#model')}", health "${await page.textContent('#health')}"`;
});

await check('a message streams its reply (several DOM updates before the end)', async () => {
  await page.click('#settings summary');
  await page.fill('#max-tokens', '120');
  await page.fill('#temperature', '0.7');
  await recordUpdates(page);
  await sendMessage(page, 'Hello there');
  await page.waitForSelector('#stop:not([hidden])', { timeout: 5000 });
  await page.waitForFunction(() => {
    const all = document.querySelectorAll('#messages article.msg.assistant');
    return all.length && all[all.length - 1].dataset.state !== 'streaming';
  }, null, { timeout: 90000 });
  const reply = lastReply(page);
  const state = await reply.getAttribute('data-state');
  const meta = await reply.locator('.meta').textContent();
  expect(state === 'done', `the reply ended in state ${state}: ${meta}`);
  firstReply = await reply.locator('.content').textContent();
  expect(firstReply.length > 0, 'the reply is empty');
  // max_tokens 120 with the model's end tokens biased away: the reply is cut at 120 tokens, and the
  // usage chunk (stream_options.include_usage) is shown.
  expect(meta.includes('cut at max tokens') && meta.includes('120 completion tokens'),
         `meta line "${meta}" lacks the length finish or the usage`);
  const partial = new Set((await updates(page))
    .filter((u) => u.state === 'streaming' && u.len > 0 && u.len < firstReply.length).map((u) => u.len));
  expect(partial.size >= 2, `only ${partial.size} partial renderings of the reply before its end`);
  expect(await page.isHidden('#stop') && await page.isVisible('#send'), 'Stop still shown after the end');
  expect(errors.length === 0, errors.join('; '));
  await page.screenshot({ path: path.join(out, 'webui-reply.png'), fullPage: true });
  return `${firstReply.length} characters in ${partial.size} partial renderings; ${meta.trim()}`;
});

await check('Stop ends a long generation and the server sees the client go away', async () => {
  await page.click('#new-chat');
  await page.fill('#max-tokens', '');  // to the end of the context: minutes of tokens
  const logBefore = fs.readFileSync(serverLog, 'utf8').length;
  await recordUpdates(page);
  await sendMessage(page, 'Tell me a long story');
  await page.waitForFunction(() => (window.__updates || []).filter((u) => u.state === 'streaming' && u.len > 0).length >= 3,
                             null, { timeout: 30000 });
  await page.click('#stop');
  await page.waitForSelector('#messages article.msg.assistant[data-state="stopped"]', { timeout: 5000 });
  stoppedLength = (await lastReply(page).locator('.content').textContent()).length;
  expect(stoppedLength > 0, 'nothing was shown before Stop');
  expect(await page.isVisible('#send'), 'Send not back after Stop');
  // The generation is cancelled on the server: no request processing, and its log line says so.
  let health = {};
  for (let i = 0; i < 50; i++) {
    health = await (await fetch(`${base}/health`)).json();
    if (health.requests_processing === 0) break;
    await sleep(100);
  }
  expect(health.requests_processing === 0, `the server still processes ${health.requests_processing} request(s) 5 s after Stop`);
  let line = '';
  for (let i = 0; i < 50 && !line; i++) {
    line = fs.readFileSync(serverLog, 'utf8').slice(logBefore).split('\n')
      .find((l) => l.includes('POST /v1/chat/completions')) || '';
    if (!line) await sleep(100);
  }
  expect(line.includes('client disconnected'), `the server's request line does not say the client left: "${line}"`);
  expect(/ prompt=[1-9]/.test(line) && / completion=[1-9]/.test(line),
    `the server's request line does not give the prompt and the tokens sent before Stop: "${line}"`);
  await sleep(500);
  const after = (await lastReply(page).locator('.content').textContent()).length;
  expect(after === stoppedLength, `the reply grew after Stop (${stoppedLength} -> ${after})`);
  return `stopped at ${stoppedLength} characters; server: ${line.replace(/^.*(POST)/, '$1').slice(0, 160)}`;
});

await check('a reload restores both conversations, and deleting one is kept', async () => {
  await page.reload();
  await page.waitForSelector('#health[data-state="ok"]', { timeout: 15000 });
  const titles = await page.locator('#conversations li .title').allTextContents();
  expect(titles.length === 2, `${titles.length} conversations listed after reload: ${JSON.stringify(titles)}`);
  expect(titles[0] === 'Tell me a long story' && titles[1] === 'Hello there', `titles ${JSON.stringify(titles)}`);
  // The open one is the stopped conversation, with the text shown before Stop.
  const stopped = lastReply(page);
  expect(await stopped.getAttribute('data-state') === 'stopped', 'the stopped reply is not marked stopped after reload');
  const len = (await stopped.locator('.content').textContent()).length;
  expect(len === stoppedLength, `the stopped reply has ${len} characters after reload, ${stoppedLength} before`);
  expect(await page.inputValue('#max-tokens') === '' && await page.inputValue('#temperature') === '0.7',
         'the sampling settings were not restored');
  await page.locator('#conversations li .title', { hasText: 'Hello there' }).click();
  const users = await page.locator('#messages article.msg.user .content').allTextContents();
  const reply = await lastReply(page).locator('.content').textContent();
  expect(users.length === 1 && users[0] === 'Hello there', `user messages ${JSON.stringify(users)}`);
  expect(reply === firstReply, 'the first reply differs after reload');
  await page.locator('#conversations li', { hasText: 'Tell me a long story' }).locator('.delete').click();
  await page.reload();
  await page.waitForSelector('#conversations li');
  const left = await page.locator('#conversations li .title').allTextContents();
  expect(left.length === 1 && left[0] === 'Hello there', `after delete and reload: ${JSON.stringify(left)}`);
  expect(errors.length === 0, errors.join('; '));
  return 'titles, texts, settings and a deletion survived reloads';
});

// Reasoning and tool calls need a model that makes them: the stream is canned here (page.route), in
// the server's chunk shapes (server/http-api.md, Streaming), and the page's next request is checked.
await check('reasoning is folded away, tool calls and JSON are preformatted (canned stream)', async () => {
  const sse = (chunks) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';
  const delta = (d, finish = null) => ({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: d, finish_reason: finish }] });
  const replies = [
    sse([delta({ role: 'assistant', content: '' }), delta({ reasoning_content: 'Let me think. ' }),
         delta({ reasoning_content: 'The user wants the weather.' }),
         delta({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
         delta({ tool_calls: [{ index: 0, function: { arguments: '{"city": ' } }] }),
         delta({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }), delta({}, 'tool_calls')]),
    sse([delta({ role: 'assistant', content: '' }), delta({ content: '{"temps": [18, ' }), delta({ content: '21]}' }),
         delta({}, 'stop')]),
  ];
  const bodies = [];
  await page.route('**/v1/chat/completions', (route) => {
    bodies.push(JSON.parse(route.request().postData()));
    route.fulfill({ status: 200, contentType: 'text/event-stream', body: replies[bodies.length - 1] });
  });
  try {
    await page.click('#new-chat');
    await sendMessage(page, 'Weather in Paris?');
    await page.waitForSelector('#messages article.msg.assistant[data-state="done"]', { timeout: 10000 });
    const reply = lastReply(page);
    const details = reply.locator('details.reasoning');
    expect(await details.isVisible() && !(await details.evaluate((d) => d.open)), 'the reasoning is not a closed <details>');
    expect(await details.locator('summary').textContent() === 'Reasoning (8 words)',
           `summary "${await details.locator('summary').textContent()}"`);
    expect(await details.locator('pre').textContent() === 'Let me think. The user wants the weather.', 'reasoning text');
    expect(await reply.locator('.tool-name').textContent() === 'tool call: get_weather (call_1)', 'tool call name');
    expect(await reply.locator('.tool-call pre.json').textContent() === JSON.stringify({ city: 'Paris' }, null, 2),
           'tool call arguments not pretty-printed');
    expect((await reply.locator('.meta').textContent()).includes('ended in a tool call'), 'finish not shown');

    await sendMessage(page, 'And as JSON?');
    await page.waitForFunction(() => document.querySelectorAll('#messages article.msg.assistant[data-state="done"]').length === 2,
                               null, { timeout: 10000 });
    const json = await lastReply(page).locator('.content pre.json').textContent();
    expect(json === JSON.stringify({ temps: [18, 21] }, null, 2), `JSON reply shown as "${json}"`);
    // The second request carries the call back as an assistant tool_calls message, without the reasoning.
    const sent = bodies[1].messages;
    const call = sent[1];
    expect(sent.length === 3 && call.role === 'assistant' && call.content === null && !('reasoning_content' in call) &&
           call.tool_calls?.[0]?.function?.arguments === '{"city": "Paris"}' && call.tool_calls[0].id === 'call_1',
           `second request's messages: ${JSON.stringify(sent)}`);
    expect(bodies[1].stream === true && bodies[1].temperature === 0.7 && !('max_tokens' in bodies[1]),
           `request fields: ${JSON.stringify({ ...bodies[1], messages: undefined })}`);
    expect(errors.length === 0, errors.join('; '));
    await page.screenshot({ path: path.join(out, 'webui-tools.png'), fullPage: true });
    return 'reasoning closed, call and JSON pretty-printed, call sent back';
  } finally {
    await page.unroute('**/v1/chat/completions');
  }
});

// A fresh browser profile (no stored key) against the server started with --api-key.
const keyContext = await browser.newContext({ viewport: { width: 1200, height: 800 } });
const keyPage = await keyContext.newPage();
const keyErrors = watchErrors(keyPage);
await check('--api-key: the page asks for the key, a wrong key gets a clear message, the right one works', async () => {
  await keyPage.goto(`${keyBase}/`);
  await keyPage.waitForSelector('#health[data-state="ok"]', { timeout: 15000 });
  await keyPage.click('#settings summary');
  await keyPage.fill('#max-tokens', '24');
  await sendMessage(keyPage, 'Hi with a key');
  await keyPage.waitForSelector('#key-dialog[open]', { timeout: 10000 });
  const ask = await keyPage.textContent('#key-message');
  expect(/needs an API key/.test(ask), `the first 401 message: "${ask}"`);
  await keyPage.fill('#key-input', 'not-the-key');
  await keyPage.click('#key-save');
  await keyPage.waitForFunction(() => /refused/.test(document.getElementById('key-message').textContent) &&
                                      document.getElementById('key-dialog').open, null, { timeout: 10000 });
  const refused = await keyPage.textContent('#key-message');
  const bubble = await lastReply(keyPage).locator('.meta .error').textContent();
  expect(/refused this API key/.test(refused) && /invalid|key/i.test(refused), `the wrong-key message: "${refused}"`);
  expect(/refused this API key/.test(bubble), `the reply does not say the key was refused: "${bubble}"`);
  await keyPage.screenshot({ path: path.join(out, 'webui-wrong-key.png') });
  await keyPage.fill('#key-input', apiKey);
  await keyPage.click('#key-save');
  await keyPage.waitForSelector('#messages article.msg.assistant[data-state="done"]', { timeout: 60000 });
  const text = await lastReply(keyPage).locator('.content').textContent();
  expect(text.length > 0, 'the reply after the right key is empty');
  expect(await keyPage.evaluate(() => localStorage.getItem('anelm.apiKey')) === JSON.stringify(apiKey),
         'the key was not stored');
  // The stored key is sent on the next turn without asking.
  await sendMessage(keyPage, 'And again');
  await keyPage.waitForFunction(() => document.querySelectorAll('#messages article.msg.assistant[data-state="done"]').length === 2,
                                null, { timeout: 60000 });
  expect(!(await keyPage.evaluate(() => document.getElementById('key-dialog').open)), 'asked for the key again');
  expect(keyErrors.filter((e) => !/401/.test(e)).length === 0, keyErrors.join('; '));
  return `asked: "${ask}"; wrong key: "${refused}"`;
});

await page.screenshot({ path: path.join(out, 'webui.png'), fullPage: true }).catch(() => {});
await browser.close();
console.log(`screenshots in ${out}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
