// Drives bankml serve with the official `ollama` npm client (ollama-js).
// Reads a JSON spec on stdin: {"host", "cases": [{"call": "show" | "chat" |
// "generate" | "list" | "pull", "args": {...}}]}, calls client[call](args)
// for each and prints one JSON array: per case {"ok": true, "result": {...}}
// or {"ok": false, "status_code", "error", "error_type"} from the error
// ollama-js throws (its ResponseError carries the server's message as a
// string when the answer is Ollama's {"error": "..."}).
import { Ollama } from 'ollama';

// ollama-js logs to the console while it reads an error ("Getting text from
// response"): keep standard output for the answer.
console.log = (...a) => console.error(...a);

let input = '';
for await (const b of process.stdin) input += b;
const spec = JSON.parse(input);
const client = new Ollama({ host: spec.host });
const out = [];
for (const c of spec.cases) {
  try {
    const r = await client[c.call](c.args);
    out.push({ ok: true, result: r });
  } catch (e) {
    out.push({ ok: false, status_code: e.status_code || 0, error: e.error !== undefined ? e.error : String(e), error_type: typeof e.error });
  }
}
process.stdout.write(JSON.stringify(out));
