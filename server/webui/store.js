// What the page keeps in this browser's localStorage: the conversations, the one open, the sampling
// settings and the API key. Each is one JSON value under an "anelm." key; an unreadable value
// (edited by hand, an older format) is ignored rather than breaking the page.

const KEYS = {
  conversations: 'anelm.conversations.v1',
  current: 'anelm.current',
  settings: 'anelm.settings.v1',
  apiKey: 'anelm.apiKey',
};

function read(key, fallback) {
  try {
    const text = localStorage.getItem(key);
    return text === null ? fallback : JSON.parse(text);
  } catch {
    return fallback;
  }
}

// Returns an error message when the browser refused to store (quota, private mode), else ''.
function write(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
    return '';
  } catch (e) {
    return `Could not save in this browser's storage: ${e.message}`;
  }
}

// [{id, title, created, messages: [{role, content, reasoning, tool_calls, state, finish, error, usage}]}],
// newest first.
export function loadConversations() {
  const list = read(KEYS.conversations, []);
  if (!Array.isArray(list)) return [];
  const ok = list.filter((c) => c && typeof c.id === 'string' && Array.isArray(c.messages));
  // A reply that was streaming when the page went away was cut there.
  for (const c of ok) {
    for (const m of c.messages) if (m.state === 'streaming') m.state = 'stopped';
  }
  return ok;
}

export function saveConversations(list) { return write(KEYS.conversations, list); }

export function loadCurrentId() { return read(KEYS.current, null); }
export function saveCurrentId(id) { return write(KEYS.current, id); }

export const DEFAULT_SETTINGS = { system: '', temperature: '', top_p: '', max_tokens: '' };
export function loadSettings() { return { ...DEFAULT_SETTINGS, ...read(KEYS.settings, {}) }; }
export function saveSettings(s) { return write(KEYS.settings, s); }

export function loadApiKey() {
  const k = read(KEYS.apiKey, '');
  return typeof k === 'string' ? k : '';
}
export function saveApiKey(k) {
  if (!k) {
    localStorage.removeItem(KEYS.apiKey);
    return '';
  }
  return write(KEYS.apiKey, k);
}

export function newId() {
  return `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
}
