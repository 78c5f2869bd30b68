// Drives bankml serve with the official `openai` npm client. Reads a JSON
// spec on stdin: {"baseURL", "apiKey", "cases": [{"kind": "chat" |
// "completion", "stream": bool, "include_usage": bool, "common_loop": bool,
// "body": {...request fields...}}]}, and prints one JSON array: per case
// {"text", "reasoning", "tool_calls": [{"id", "name", "arguments"}],
// "finish_reason", "usage", "receipt", "chunks"} or {"error"}.
const OpenAI = require('openai');

async function run(client, c) {
  const body = Object.assign({}, c.body, { stream: c.stream });
  if (c.stream && c.include_usage) body.stream_options = { include_usage: true };
  const api = c.kind === 'chat' ? client.chat.completions : client.completions;
  if (!c.stream) {
    const r = await api.create(body);
    const choice = r.choices[0];
    const calls = c.kind === 'chat' && choice.message.tool_calls
      ? choice.message.tool_calls.map((tc) => ({ id: tc.id, name: tc.function.name, arguments: tc.function.arguments }))
      : [];
    return {
      text: c.kind === 'chat' ? choice.message.content : choice.text,
      reasoning: c.kind === 'chat' ? (choice.message.reasoning_content || '') : '',
      tool_calls: calls,
      finish_reason: choice.finish_reason,
      usage: r.usage,
      receipt: r.bankml_receipt || null,
      chunks: 0,
    };
  }
  const stream = await api.create(body);
  let text = '', reasoning = '', finish = null, usage = null, receipt = null, chunks = 0;
  const calls = [];
  // tool calls stream as deltas by index: the id and name once, the arguments in pieces (OpenAI's chunk shape)
  const addCalls = (delta) => {
    for (const tc of (delta && delta.tool_calls) || []) {
      while (calls.length <= tc.index) calls.push({ id: '', name: '', arguments: '' });
      const x = calls[tc.index];
      if (tc.id) x.id = tc.id;
      if (tc.function && tc.function.name) x.name += tc.function.name;
      if (tc.function && tc.function.arguments) x.arguments += tc.function.arguments;
    }
    if (delta && delta.reasoning_content) reasoning += delta.reasoning_content;
  };
  if (c.common_loop) {
    // The loop of openai-node's and openai-python's READMEs, without optional
    // chaining on choices[0]: it throws on a chunk whose choices are empty.
    for await (const chunk of stream) {
      chunks++;
      if (chunk.bankml_receipt) receipt = chunk.bankml_receipt;
      if (chunk.usage) usage = chunk.usage;
      text += (c.kind === 'chat' ? chunk.choices[0].delta.content : chunk.choices[0].text) || '';
      if (c.kind === 'chat') addCalls(chunk.choices[0].delta);
      if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
    }
    return { text, reasoning, tool_calls: calls, finish_reason: finish, usage, receipt, chunks };
  }
  for await (const chunk of stream) {
    chunks++;
    if (chunk.bankml_receipt) receipt = chunk.bankml_receipt;
    if (chunk.usage) usage = chunk.usage;
    // Every chunk must carry choices (an array), as openai-node's documented loop
    // `chunk.choices[0]?.delta?.content` reads them: this throws on a chunk without.
    for (const choice of chunk.choices) {
      const piece = c.kind === 'chat' ? (choice.delta && choice.delta.content) : choice.text;
      if (piece) text += piece;
      if (c.kind === 'chat') addCalls(choice.delta);
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, reasoning, tool_calls: calls, finish_reason: finish, usage, receipt, chunks };
}

async function main() {
  let input = '';
  for await (const b of process.stdin) input += b;
  const spec = JSON.parse(input);
  const client = new OpenAI({ baseURL: spec.baseURL, apiKey: spec.apiKey || 'none', maxRetries: 0, timeout: 120000 });
  const out = [];
  for (const c of spec.cases) {
    try {
      out.push(await run(client, c));
    } catch (e) {
      out.push({ error: String(e && e.message ? e.message : e), status: e && e.status ? e.status : 0 });
    }
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
