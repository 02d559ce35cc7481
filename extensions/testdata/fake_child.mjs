// A stand-in for `metaclaw plugin serve --client openclaw` (tests only):
// answers the shim's JSON-RPC lines and logs what it received.
import fs from "node:fs";
import readline from "node:readline";

const log = process.env.FAKE_CHILD_LOG;
const mode = process.env.FAKE_CHILD_MODE || "ok";
fs.appendFileSync(log, JSON.stringify({ spawn: process.pid, argv: process.argv.slice(2) }) + "\n");
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const msg = JSON.parse(line);
  fs.appendFileSync(log, JSON.stringify({ method: msg.method, params: msg.params }) + "\n");
  if (msg.id === undefined) return;
  if (mode === "silent") return; // never answers: the shim must fail open
  if (mode === "crash") process.exit(3);
  let result = {};
  if (msg.method === "openclaw.before_prompt_build") result = { appendSystemContext: "<metaclaw_context>X</metaclaw_context>" };
  if (msg.method === "tools.list") result = { tools: [{ name: "metaclaw_memory_search", description: "d", input_schema: { type: "object", properties: { query: { type: "string" } } } }, { name: "not_in_contract", description: "x", input_schema: { type: "object" } }] };
  if (msg.method === "tools.call") result = { result: { echo: msg.params } };
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }) + "\n");
});
rl.on("close", () => process.exit(0));
