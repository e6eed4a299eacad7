// Reading a /v1/chat/completions stream (Server-Sent Events over fetch) into a message object.
// No DOM here: app.js renders the message after each batch of events.

// Reads `body` (a ReadableStream of SSE bytes) and calls onEvents(events) once per network read
// that completed at least one event; each event is a parsed JSON chunk. Resolves true when the
// stream ended with `data: [DONE]`, false when it ended without it. Rejects with the fetch's
// AbortError when the request is aborted (the Stop button).
export async function readSse(body, onEvents) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let sawDone = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    const events = [];
    let end;
    // An event ends at a blank line; the spec allows \n, \r\n and \r line ends.
    while ((end = buffer.search(/\r\n\r\n|\n\n|\r\r/)) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith('\r\n\r\n', end) ? 4 : 2));
      const data = frameData(frame);
      if (data === null) continue;  // a comment (": ping") or a frame without data
      if (data === '[DONE]') { sawDone = true; continue; }
      events.push(JSON.parse(data));
    }
    if (events.length) onEvents(events);
  }
  return sawDone;
}

// The data of one SSE frame (its data: lines joined by \n), or null when it has none.
function frameData(frame) {
  const lines = [];
  for (const line of frame.split(/\r\n|\n|\r/)) {
    if (!line.startsWith('data:')) continue;
    lines.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  }
  return lines.length ? lines.join('\n') : null;
}

// Applies one chat.completion.chunk to `msg` ({content, reasoning, tool_calls, finish, usage, error}).
export function applyChunk(msg, chunk) {
  if (chunk.error) {
    msg.error = chunk.error.message || JSON.stringify(chunk.error);
    return;
  }
  if (chunk.usage) msg.usage = chunk.usage;
  const choice = (chunk.choices || [])[0];
  if (!choice) return;
  const d = choice.delta || {};
  if (typeof d.content === 'string') msg.content += d.content;
  if (typeof d.reasoning_content === 'string') msg.reasoning += d.reasoning_content;
  for (const t of d.tool_calls || []) {
    // The first fragment of a call has its id and name; later ones add to its arguments.
    const i = Number.isInteger(t.index) ? t.index : msg.tool_calls.length;
    const call = msg.tool_calls[i] || (msg.tool_calls[i] = { id: '', name: '', arguments: '' });
    if (t.id) call.id = t.id;
    if (t.function?.name) call.name = t.function.name;
    if (typeof t.function?.arguments === 'string') call.arguments += t.function.arguments;
  }
  if (choice.finish_reason) msg.finish = choice.finish_reason;
}

// The OpenAI messages of a conversation (what the server is sent): the system prompt first, then
// every finished turn. Reasoning is not sent back; empty failed or stopped replies are left out.
export function requestMessages(systemPrompt, messages) {
  const out = [];
  if (systemPrompt.trim()) out.push({ role: 'system', content: systemPrompt });
  for (const m of messages) {
    if (m.role === 'user') {
      out.push({ role: 'user', content: m.content });
      continue;
    }
    const calls = (m.tool_calls || []).filter((c) => c && c.name);
    if (!m.content && !calls.length) continue;
    const a = { role: 'assistant', content: m.content || (calls.length ? null : '') };
    if (calls.length) {
      a.tool_calls = calls.map((c) => ({
        id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments || '{}' },
      }));
    }
    out.push(a);
  }
  return out;
}
