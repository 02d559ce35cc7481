// Drives index.mjs like OpenClaw does (tests only): register() three times
// in different modes, then turn hooks on a discovery registration.
import fs from "node:fs";
import path from "node:path";

const [, , shimPath, childPath, scenario] = process.argv;
const { default: plugin } = await import(shimPath);
const out = { warnings: [] };
const regs = [];
// OpenClaw's whole config: conversation access granted unless the scenario
// is "noaccess".
const access = scenario !== "noaccess";
const config = { plugins: { entries: { metaclaw: { enabled: true, hooks: { allowConversationAccess: access } } } } };
for (const mode of ["full", "discovery", "discovery"]) {
  const handlers = {};
  const api = {
    registrationMode: mode,
    config,
    // A silent child shows the deadline. Otherwise the deadline is far away
    // (a loaded machine), so an answer or the child's exit ends the wait.
    pluginConfig: { timeoutMs: scenario === "silent" ? 300 : 120000, home: process.env.TEST_HOME, agents: ["main"] },
    rootDir: process.env.TEST_ROOT,
    logger: { debug(m) { (out.debug ??= []).push(String(m)); }, warn(m) { out.warnings.push(m); }, info() {} },
    on: (name, fn) => { handlers[name] = fn; },
    registerService: (svc) => { out.service = svc.id; },
    registerTool: (factory, opts) => { handlers.__tools = factory; out.toolNames = opts.names; },
  };
  plugin.register(api);
  regs.push(handlers);
}
out.hooks = Object.keys(regs[1]).filter((k) => !k.startsWith("__")).sort();
out.toolsBeforeChild = regs[1].__tools({ agentId: "main" }).map((t) => t.name);
const ev = { prompt: "hi", messages: [], systemPrompt: "x".repeat(50000), tools: [1, 2, 3] };
const ctx = { runId: "run-1", agentId: "main", sessionId: "s1", trace: { traceId: "a".repeat(32) }, config: { big: true } };
const t0 = Date.now();
out.first = await regs[1].before_prompt_build(ev, ctx);
out.firstMs = Date.now() - t0;
out.dup = await regs[2].before_prompt_build(ev, ctx); // same run on another registration
out.second = await regs[2].before_prompt_build(ev, { ...ctx, runId: "run-2" });
await regs[1].agent_end({ messages: [{ role: "user", content: "hi" }, { role: "assistant", content: [{ type: "text", text: "yo" }] }], success: true }, ctx);
// The host's tool list replaces the fallback once the child answered
// tools.list: wait for that (bounded), not for a fixed time.
let tools = regs[1].__tools({ agentId: "main", sessionId: "s1" });
for (let i = 0; scenario === "ok" && i < 3000 && tools.length === out.toolsBeforeChild.length; i++) {
  await new Promise((r) => setTimeout(r, 10));
  tools = regs[1].__tools({ agentId: "main", sessionId: "s1" });
}
out.toolsAfterChild = tools.map((t) => t.name);
out.toolsOtherAgent = regs[1].__tools({ agentId: "coder" }).map((t) => t.name);
fs.writeFileSync(path.join(process.env.TEST_HOME, "disabled"), "off\n");
out.toolsDisabled = regs[1].__tools({ agentId: "main" }).map((t) => t.name);
fs.rmSync(path.join(process.env.TEST_HOME, "disabled"));
if (scenario === "ok") out.toolResult = await tools[0].execute("call-1", { query: "tea" });
console.log(JSON.stringify(out));
