// The chat page: conversations (localStorage), the server's model and health, sending a turn to
// /v1/chat/completions as a stream, Stop, and asking for the API key when the server answers 401.
import { readSse, applyChunk, requestMessages } from './stream.js';
import { messageView } from './render.js';
import * as store from './store.js';

const $ = (id) => document.getElementById(id);

const state = {
  conversations: store.loadConversations(),
  currentId: store.loadCurrentId(),
  settings: store.loadSettings(),
  apiKey: store.loadApiKey(),
  modelId: '',
  controller: null,      // the AbortController of the request being streamed
  views: new WeakMap(),  // message -> its view, for the conversation on screen
  savedAt: 0,
};

// ---- storage -------------------------------------------------------------------------------------

function notice(text) {
  $('notice').textContent = text;
  $('notice').hidden = !text;
}

function persist() {
  state.savedAt = Date.now();
  const err = store.saveConversations(state.conversations) || store.saveCurrentId(state.currentId);
  if (err) notice(err);
}

const current = () => state.conversations.find((c) => c.id === state.currentId) || null;

function titleOf(text) {
  const line = text.trim().split('\n')[0];
  return line.length > 48 ? `${line.slice(0, 47)}…` : line || 'New chat';
}

// ---- conversation list ---------------------------------------------------------------------------

function renderSidebar() {
  const list = $('conversations');
  list.replaceChildren();
  for (const c of state.conversations) {
    const li = document.createElement('li');
    li.dataset.id = c.id;
    if (c.id === state.currentId) li.className = 'active';
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'title';
    open.textContent = c.title;
    open.title = new Date(c.created).toLocaleString();
    open.addEventListener('click', () => selectConversation(c.id));
    const del = document.createElement('button');
    del.type = 'button';
    del.className = 'delete';
    del.textContent = '×';
    del.title = 'Delete this conversation';
    del.setAttribute('aria-label', `Delete ${c.title}`);
    del.addEventListener('click', () => deleteConversation(c.id));
    li.append(open, del);
    list.append(li);
  }
}

function renderConversation() {
  const box = $('messages');
  box.replaceChildren();
  state.views = new WeakMap();
  const conv = current();
  if (!conv || !conv.messages.length) {
    const hint = document.createElement('p');
    hint.className = 'empty';
    hint.textContent = 'Send a message to start. Conversations are kept in this browser.';
    box.append(hint);
    return;
  }
  for (const m of conv.messages) {
    const v = messageView(m);
    state.views.set(m, v);
    box.append(v.root);
  }
  box.scrollTop = box.scrollHeight;
}

function selectConversation(id) {
  state.currentId = id;
  persist();
  renderSidebar();
  renderConversation();
}

function createConversation() {
  const conv = { id: store.newId(), title: 'New chat', created: Date.now(), messages: [] };
  state.conversations.unshift(conv);
  state.currentId = conv.id;
  return conv;
}

function newConversation() {
  const conv = current();
  if (!conv || conv.messages.length) createConversation();
  persist();
  renderSidebar();
  renderConversation();
  $('input').focus();
}

function deleteConversation(id) {
  const conv = state.conversations.find((c) => c.id === id);
  if (conv && state.controller && conv.messages.some((m) => m.state === 'streaming')) state.controller.abort();
  state.conversations = state.conversations.filter((c) => c.id !== id);
  if (state.currentId === id) state.currentId = state.conversations[0]?.id ?? null;
  persist();
  renderSidebar();
  renderConversation();
}

// Re-renders one message if it is on screen, keeping the view scrolled to the end when it was there.
function refresh(msg) {
  const v = state.views.get(msg);
  if (!v || !v.root.isConnected) return;
  const box = $('messages');
  const atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  v.update(msg);
  if (atEnd) box.scrollTop = box.scrollHeight;
}

// ---- settings ------------------------------------------------------------------------------------

const SETTING_INPUTS = { system: 'system-prompt', temperature: 'temperature', top_p: 'top-p', max_tokens: 'max-tokens' };

function bindSettings() {
  for (const [key, id] of Object.entries(SETTING_INPUTS)) {
    const input = $(id);
    input.value = state.settings[key];
    input.addEventListener('input', () => {
      state.settings[key] = input.value;
      const err = store.saveSettings(state.settings);
      if (err) notice(err);
    });
  }
}

// The request's sampling fields; a blank setting leaves the server's default.
function sampling() {
  const out = {};
  const s = state.settings;
  if (String(s.temperature).trim() !== '') out.temperature = Number(s.temperature);
  if (String(s.top_p).trim() !== '') out.top_p = Number(s.top_p);
  if (String(s.max_tokens).trim() !== '') out.max_tokens = Number(s.max_tokens);
  return out;
}

// ---- the server: model and health ----------------------------------------------------------------

let modelLoading = null;  // the /v1/models request in flight (start-up and the first health poll share it)
function loadModel() {
  modelLoading ??= fetchModel().finally(() => { modelLoading = null; });
  return modelLoading;
}

async function fetchModel() {
  try {
    const res = await fetch('/v1/models', { cache: 'no-store' });
    const body = await res.json();
    const m = body.data?.[0];
    if (!m) return;
    state.modelId = m.id;
    $('model').textContent = m.meta?.n_ctx ? `${m.id} · ctx ${m.meta.n_ctx}` : m.id;
  } catch {
    // /health reports the server unreachable
  }
}

function showHealth(kind, text) {
  const h = $('health');
  h.dataset.state = kind;
  h.textContent = text;
}

async function pollHealth() {
  let ready = false;
  try {
    const res = await fetch('/health', { cache: 'no-store' });
    const h = await res.json();
    ready = res.ok;
    if (res.ok) {
      showHealth('ok', `ready · ${h.requests_processing ?? 0}/${h.parallel ?? '?'} busy`);
      if (h.model !== state.modelId) await loadModel();  // first poll, or a restart with another model
    } else if (h.status === 'loading') {
      showHealth('loading', `loading ${Math.round((h.progress || 0) * 100)}%`);
    } else if (h.status === 'draining') {
      showHealth('error', 'shutting down');
    } else {
      showHealth('error', `error: ${h.error?.message || res.status}`);
    }
  } catch {
    showHealth('down', 'unreachable');
  }
  setTimeout(pollHealth, ready ? 5000 : 1500);
}

// ---- the API key ---------------------------------------------------------------------------------

let keyAnswer = null;  // resolves the open key dialog's promise

// Opens the key dialog with `message`; resolves to the key typed, or null when cancelled.
function askKey(message) {
  $('key-message').textContent = message;
  $('key-input').value = '';
  const dialog = $('key-dialog');
  if (!dialog.open) dialog.showModal();
  $('key-input').focus();
  return new Promise((resolve) => { keyAnswer = resolve; });
}

function closeKeyDialog(value) {
  const resolve = keyAnswer;
  keyAnswer = null;
  if ($('key-dialog').open) $('key-dialog').close();
  if (resolve) resolve(value);
}

function bindKeyDialog() {
  $('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const key = $('key-input').value.trim();
    if (!key) return;
    state.apiKey = key;
    const err = store.saveApiKey(key);
    if (err) notice(err);
    closeKeyDialog(key);
  });
  $('key-cancel').addEventListener('click', () => closeKeyDialog(null));
  $('key-forget').addEventListener('click', () => {
    state.apiKey = '';
    store.saveApiKey('');
    closeKeyDialog(null);
  });
  // Escape closes the dialog without a key (a dialog reopened meanwhile has its own answer).
  $('key-dialog').addEventListener('close', () => { if (!$('key-dialog').open) closeKeyDialog(null); });
  $('key-button').addEventListener('click', () => {
    askKey(state.apiKey ? `A key is stored (…${state.apiKey.slice(-4)}). Type a new one to replace it.`
                        : 'No key is stored. Servers started with --api-key need one.');
  });
}

// ---- generating ----------------------------------------------------------------------------------

async function errorText(res) {
  const text = await res.text().catch(() => '');
  try {
    return `${res.status}: ${JSON.parse(text).error.message}`;
  } catch {
    return `${res.status} ${res.statusText}${text ? `: ${text.slice(0, 300)}` : ''}`;
  }
}

function setBusy(busy) {
  $('send').hidden = busy;
  $('stop').hidden = !busy;
}

// Streams one reply into `reply`. Returns the message to show when the server refused the key
// (401), else null (the reply then holds the text, or why there is none).
async function generate(conv, reply) {
  const controller = new AbortController();
  state.controller = controller;
  setBusy(true);
  const history = conv.messages.slice(0, conv.messages.indexOf(reply));
  const body = {
    model: state.modelId || 'default',
    messages: requestMessages(state.settings.system, history),
    stream: true,
    stream_options: { include_usage: true },
    ...sampling(),
  };
  const headers = { 'Content-Type': 'application/json' };
  const sentKey = state.apiKey;
  if (sentKey) headers.Authorization = `Bearer ${sentKey}`;
  let denied = null;
  try {
    const res = await fetch('/v1/chat/completions',
                            { method: 'POST', headers, body: JSON.stringify(body), signal: controller.signal });
    if (res.status === 401) {
      const why = await errorText(res);
      denied = sentKey
        ? `The server refused this API key (${why}). Check the key given to anelm serve --api-key.`
        : 'This server needs an API key (it was started with --api-key). Enter it to send.';
      reply.state = 'error';
      reply.error = denied;
    } else if (!res.ok) {
      reply.state = 'error';
      reply.error = await errorText(res);
    } else {
      const complete = await readSse(res.body, (events) => {
        for (const e of events) applyChunk(reply, e);
        refresh(reply);
        if (Date.now() - state.savedAt > 2000) persist();
      });
      if (!complete && !reply.error) reply.error = 'The stream ended early (the server closed it).';
      reply.state = reply.error ? 'error' : 'done';
    }
  } catch (e) {
    if (e.name === 'AbortError') {
      reply.state = 'stopped';
    } else {
      reply.state = 'error';
      reply.error = `The request failed: ${e.message}`;
    }
  } finally {
    state.controller = null;
    setBusy(false);
    refresh(reply);
    persist();
  }
  return denied;
}

async function send(text) {
  if (state.controller || !text.trim()) return;
  const conv = current() || createConversation();
  conv.messages.push({ role: 'user', content: text });
  if (conv.title === 'New chat') conv.title = titleOf(text);
  const reply = { role: 'assistant', content: '', reasoning: '', tool_calls: [], state: 'streaming' };
  conv.messages.push(reply);
  persist();
  renderSidebar();
  renderConversation();
  // A refused key: ask for one and send again, until the server takes it or the user cancels.
  for (;;) {
    const denied = await generate(conv, reply);
    if (!denied) return;
    if (!(await askKey(denied))) return;
    Object.assign(reply, { content: '', reasoning: '', tool_calls: [], state: 'streaming', error: undefined,
                           finish: undefined, usage: undefined });
    refresh(reply);
  }
}

// ---- start ---------------------------------------------------------------------------------------

function bindComposer() {
  const input = $('input');
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value;
    if (!text.trim() || state.controller) return;
    input.value = '';
    send(text);
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => state.controller?.abort());
  $('new-chat').addEventListener('click', newConversation);
}

if (!current()) state.currentId = state.conversations[0]?.id ?? null;
bindSettings();
bindKeyDialog();
bindComposer();
renderSidebar();
renderConversation();
loadModel();
pollHealth();
