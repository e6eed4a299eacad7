// The DOM of one message. Model output is only ever set as text (textContent), never as HTML, so a
// reply cannot inject markup or script into the page.

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

// JSON text pretty-printed, or null when `text` is not (yet) complete JSON.
function prettyJson(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return null;
  }
}

// Fills `target` with `text`: a reply that is a JSON value is shown preformatted (pretty once it
// parses), ``` fenced blocks as code, the rest as text with its line breaks.
export function renderText(target, text) {
  target.replaceChildren();
  if (/^\s*[[{]/.test(text)) {
    target.append(el('pre', 'json', prettyJson(text) ?? text));
    return;
  }
  const parts = text.split('```');
  parts.forEach((part, i) => {
    if (i % 2 === 0) {
      if (part) target.append(el('div', 'text', part));
      return;
    }
    const nl = part.indexOf('\n');
    const lang = nl >= 0 ? part.slice(0, nl).trim() : '';
    const body = nl >= 0 ? part.slice(nl + 1) : part;
    const pre = el('pre', 'code');
    if (lang) pre.dataset.lang = lang;
    pre.append(el('code', '', lang === 'json' ? prettyJson(body) ?? body : body));
    target.append(pre);
  });
}

// The message's element; update(msg) refreshes it in place (the reasoning's <details> keeps its
// open/closed state across updates).
export function messageView(msg) {
  const root = el('article', `msg ${msg.role}`);
  const role = el('div', 'role', msg.role === 'user' ? 'you' : 'assistant');
  const reasoning = el('details', 'reasoning');
  const reasoningSummary = el('summary', '', 'Reasoning');
  const reasoningText = el('pre', 'reasoning-text');
  reasoning.append(reasoningSummary, reasoningText);
  const content = el('div', 'content');
  const tools = el('div', 'tool-calls');
  const meta = el('div', 'meta');
  root.append(role, reasoning, content, tools, meta);

  function update(m) {
    root.dataset.state = m.state || 'done';
    reasoning.hidden = !m.reasoning;
    if (m.reasoning) {
      const thinking = m.state === 'streaming' && !m.content && !(m.tool_calls || []).length;
      const words = m.reasoning.trim().split(/\s+/).length;
      reasoningSummary.textContent = thinking ? `Thinking… (${words} words)` : `Reasoning (${words} words)`;
      reasoningText.textContent = m.reasoning;
    }
    if (m.role === 'user') content.textContent = m.content;
    else renderText(content, m.content || '');
    tools.replaceChildren();
    for (const call of m.tool_calls || []) {
      if (!call) continue;
      const box = el('div', 'tool-call');
      box.append(el('div', 'tool-name', `tool call: ${call.name || '?'}${call.id ? ` (${call.id})` : ''}`));
      box.append(el('pre', 'json', prettyJson(call.arguments) ?? call.arguments));
      tools.append(box);
    }
    meta.replaceChildren();
    if (m.role === 'assistant') {
      const bits = [];
      if (m.state === 'streaming') bits.push('generating…');
      if (m.state === 'stopped') bits.push('stopped');
      if (m.finish === 'length') bits.push('cut at max tokens');
      if (m.finish === 'tool_calls') bits.push('ended in a tool call');
      if (m.usage) bits.push(`${m.usage.prompt_tokens} prompt + ${m.usage.completion_tokens} completion tokens`);
      if (bits.length) meta.append(el('span', '', bits.join(' · ')));
      if (m.error) meta.append(el('div', 'error', m.error));
    }
  }
  update(msg);
  return { root, update };
}
