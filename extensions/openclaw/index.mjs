// MetaClaw for OpenClaw: a thin, dependency-free shim.
//
// Everything MetaClaw does happens in the Go binary. This file only:
//   1. starts `bin/metaclaw plugin serve --client openclaw` ONCE PER PROCESS
//      (OpenClaw calls register() several times per process, in different
//      modes and separate module instances; turn hooks arrive on a
//      `discovery` registration, session hooks on the `full` one), so the
//      child and its state live on a process-global, never in module scope;
//   2. forwards hook payloads to it as newline-delimited JSON-RPC 2.0
//      (`openclaw.<hook>` methods with {event, ctx}) and returns what it
//      answers (before_prompt_build → {appendSystemContext});
//   3. offers MetaClaw's tools (tools.list / tools.call) to the agents it
//      serves (config.agents), under names no bundled plugin uses;
//   4. says so, once per process, when OpenClaw withholds the conversation
//      hooks (hooks.allowConversationAccess) or no metaclaw binary is found.
// Every call has a deadline; on any failure the turn proceeds untouched
// (fail open). The child spools what it could not deliver.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const PLUGIN_ID = "metaclaw";
const HERE = path.dirname(fileURLToPath(import.meta.url));
const GLOBAL = Symbol.for("metaclaw.openclaw.bridge.v1");
const MAX_LINE = 8 << 20; // the child refuses larger messages
const DEFAULT_TIMEOUT_MS = 2000;
const RESPAWN_BACKOFF_MS = 5000;

// The tools this plugin may register (must equal contracts.tools in
// openclaw.plugin.json). Which of them exist is decided by the host at run
// time (tools.list); the fallback descriptions are used until it answers.
const CONTRACT_TOOLS = {
  metaclaw_memory_search: "Search MetaClaw's long-term memory of this user for facts, preferences and past events.",
  metaclaw_memory_store: "Store a fact or preference in MetaClaw's long-term memory.",
  metaclaw_memory_forget: "Forget a memory in MetaClaw's long-term memory.",
  metaclaw_memory_status: "Show what MetaClaw's long-term memory holds.",
  metaclaw_skills_search: "Search MetaClaw's skill library for how-to knowledge relevant to a task.",
  metaclaw_status: "Show MetaClaw's status: whether the learning host runs, what it has recorded and learned.",
};

function state() {
  if (!globalThis[GLOBAL]) {
    globalThis[GLOBAL] = { bridge: null, once: new Map(), tools: null, toolsAt: 0, toolsCacheRead: false, warned: new Set() };
  }
  return globalThis[GLOBAL];
}

// once reports whether key is new (process-wide, bounded): a hook delivered
// to two registrations of this plugin is forwarded once.
function once(key, ttlMs = 10 * 60 * 1000) {
  const s = state();
  const now = Date.now();
  const seen = s.once.get(key);
  if (seen && now - seen < ttlMs) return false;
  s.once.set(key, now);
  if (s.once.size > 4096) {
    for (const [k, t] of s.once) {
      if (now - t >= ttlMs || s.once.size > 2048) s.once.delete(k);
    }
  }
  return true;
}

// plain makes a JSON-safe copy: functions dropped, cycles cut, depth bounded.
function plain(value, depth = 0, seen = new WeakSet()) {
  if (value === null || value === undefined) return value;
  const t = typeof value;
  if (t === "function" || t === "symbol") return undefined;
  if (t === "bigint") return value.toString();
  if (t !== "object") return value;
  if (depth > 24) return null;
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (seen.has(value)) return null;
  seen.add(value);
  let out;
  if (Array.isArray(value)) {
    out = value.map((v) => {
      const p = plain(v, depth + 1, seen);
      return p === undefined ? null : p;
    });
  } else if (ArrayBuffer.isView(value)) {
    out = null;
  } else {
    out = {};
    for (const k of Object.keys(value)) {
      const p = plain(value[k], depth + 1, seen);
      if (p !== undefined) out[k] = p;
    }
  }
  seen.delete(value);
  return out;
}

// tail keeps the messages of the current turn: from the last user message on.
function tail(messages, min = 0) {
  if (!Array.isArray(messages)) return undefined;
  let i = messages.length - 1;
  while (i > 0 && messages[i]?.role !== "user") i--;
  return messages.slice(Math.max(0, Math.min(i, messages.length - min)));
}

// slim drops what the child never reads (the 45 KB system prompt, the tool
// catalogue, old history), keeping messages small and fast.
function slim(hook, event, ctx) {
  const e = { ...(event || {}) };
  const c = { ...(ctx || {}) };
  delete c.config;
  delete e.systemPrompt;
  delete e.tools;
  delete e.historyMessages;
  if (hook === "before_prompt_build") e.messages = tail(e.messages, 6);
  if (hook === "agent_end" || hook === "before_agent_finalize") e.messages = tail(e.messages);
  if (hook === "before_reset") e.messages = tail(e.messages, 2);
  return { event: plain(e), ctx: plain(c) };
}

class Bridge {
  constructor(opts) {
    this.opts = opts;
    this.child = null;
    this.pending = new Map();
    this.nextId = 1;
    this.buf = "";
    this.failedAt = 0;
    this.stopTimer = null;
  }

  binary() {
    if (this.bin === undefined) {
      this.bin = findBinary(this.opts);
      if (!this.bin) warnOnce("binary", this.opts.logger, NO_BINARY);
    }
    return this.bin;
  }

  ensure() {
    if (this.stopTimer) {
      clearTimeout(this.stopTimer);
      this.stopTimer = null;
    }
    if (this.child) return true;
    if (Date.now() - this.failedAt < RESPAWN_BACKOFF_MS) return false;
    const bin = this.binary();
    if (!bin) {
      // Nothing to start (the warning said where we looked); look again
      // after the back-off, in case it was installed meanwhile.
      this.failedAt = Date.now();
      this.bin = undefined;
      return false;
    }
    const env = { ...process.env };
    if (this.opts.home) env.METACLAW_HOME = this.opts.home;
    let child;
    try {
      child = spawn(bin, ["plugin", "serve", "--client", "openclaw"], {
        stdio: ["pipe", "pipe", "pipe"],
        env,
        windowsHide: true,
      });
    } catch (err) {
      this.fail(err);
      return false;
    }
    this.child = child;
    this.buf = "";
    // Never keep OpenClaw alive for our sake: a one-shot `agent --local`
    // exits when its work is done; the child then reads EOF and exits.
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr]) s?.unref?.();
    child.on("error", (err) => this.gone(child, err));
    child.on("exit", (code, sig) => this.gone(child, new Error(`metaclaw exited (${sig || code})`)));
    child.stdin.on("error", () => {});
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => this.read(chunk));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      const log = this.opts.logger;
      for (const line of String(chunk).split("\n")) if (line.trim()) log?.debug?.(`[metaclaw] ${line.slice(0, 2000)}`);
    });
    this.send({ jsonrpc: "2.0", method: "initialize", params: { client: "openclaw", config: this.opts.config || {}, pid: process.pid } });
    return true;
  }

  fail(err) {
    this.failedAt = Date.now();
    this.bin = undefined; // look again next time: it may have been installed since
    this.opts.logger?.warn?.(`[metaclaw] cannot start metaclaw (${err?.message || err}); turns proceed without it`);
  }

  gone(child, err) {
    if (this.child !== child) return;
    this.child = null;
    if (err?.code === "ENOENT" || err?.code === "EACCES") this.fail(err);
    else this.failedAt = Date.now() - RESPAWN_BACKOFF_MS + 500;
    for (const [, p] of this.pending) p.reject(err);
    this.pending.clear();
  }

  read(chunk) {
    this.buf += chunk;
    if (this.buf.length > MAX_LINE && this.buf.indexOf("\n") < 0) this.buf = "";
    let nl;
    while ((nl = this.buf.indexOf("\n")) >= 0) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      if (!line.trim()) continue;
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        continue;
      }
      const p = msg && msg.id !== undefined ? this.pending.get(msg.id) : undefined;
      if (!p) continue;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(Object.assign(new Error(msg.error.message || "metaclaw error"), { code: msg.error.code }));
      else p.resolve(msg.result);
    }
  }

  send(msg) {
    const line = JSON.stringify(msg);
    if (line.length > MAX_LINE) throw new Error("message too large");
    this.child.stdin.write(line + "\n");
  }

  call(method, params, timeoutMs) {
    if (!this.ensure()) return Promise.reject(new Error("metaclaw unavailable"));
    const id = this.nextId++;
    const ms = timeoutMs || this.opts.timeoutMs || DEFAULT_TIMEOUT_MS;
    return new Promise((resolve, reject) => {
      // A pending call keeps the process alive until it is answered or
      // times out (the child and its pipes themselves never do).
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`metaclaw ${method} timed out after ${ms} ms`));
      }, ms);
      this.pending.set(id, {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      try {
        this.send({ jsonrpc: "2.0", id, method, params });
      } catch (err) {
        this.pending.delete(id);
        clearTimeout(timer);
        reject(err);
      }
    });
  }

  // stopSoon closes the child's stdin after a grace period (session_end
  // hooks still arrive after gateway_stop); the child then drains and exits.
  stopSoon(ms = 3000) {
    if (!this.child || this.stopTimer) return;
    const child = this.child;
    this.stopTimer = setTimeout(() => {
      this.stopTimer = null;
      if (this.child === child) child.stdin.end();
    }, ms);
    this.stopTimer.unref?.();
  }
}

function executable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function metaclawHome(opts) {
  return opts.home || process.env.METACLAW_HOME || path.join(os.homedir(), ".metaclaw");
}

// findBinary: the configured binary, bin/metaclaw beside this file (what
// `metaclaw wire openclaw` links), $METACLAW_BIN, PATH, ~/.local/bin (where
// install.sh puts it; a Gateway service often runs without it on PATH), and
// the binary install.sh recorded. A folder copied by hand has no bin/.
function findBinary(opts) {
  const root = opts.rootDir || HERE;
  if (opts.binary) return path.resolve(root, opts.binary);
  const candidates = [path.join(root, "bin", "metaclaw")];
  if (process.env.METACLAW_BIN) candidates.push(process.env.METACLAW_BIN);
  for (const dir of (process.env.PATH || "").split(path.delimiter)) if (dir) candidates.push(path.join(dir, "metaclaw"));
  candidates.push(path.join(os.homedir(), ".local", "bin", "metaclaw"));
  try {
    const rec = JSON.parse(fs.readFileSync(path.join(metaclawHome(opts), "install.json"), "utf8"));
    if (rec && typeof rec.binary === "string") candidates.push(rec.binary);
  } catch {
    // not installed by install.sh
  }
  return candidates.find(executable) || "";
}

const NO_BINARY =
  "[metaclaw] no metaclaw binary found (bin/metaclaw in the plugin folder, $METACLAW_BIN, PATH, ~/.local/bin): " +
  "turns proceed without MetaClaw. Install it (./install.sh in a MetaClaw checkout) and run `metaclaw wire openclaw`, " +
  "or set plugins.entries.metaclaw.config.binary.";
const NO_CONVERSATION_ACCESS =
  "[metaclaw] OpenClaw blocks this plugin's conversation hooks, so MetaClaw neither adds context nor learns. " +
  "Grant access with: openclaw config set plugins.entries." + PLUGIN_ID + ".hooks.allowConversationAccess true";

// warnOnce logs a problem once per process (register() runs several times).
function warnOnce(key, logger, msg) {
  const s = state();
  if (s.warned.has(key)) return;
  s.warned.add(key);
  logger?.warn?.(msg);
}

// conversationAccess reports whether OpenClaw delivers the conversation
// hooks to this (non-bundled) plugin.
function conversationAccess(config) {
  return config?.plugins?.entries?.[PLUGIN_ID]?.hooks?.allowConversationAccess === true;
}

// served says whether MetaClaw serves an OpenClaw agent (config.agents).
function served(cfg, agentId) {
  const agents = Array.isArray(cfg.agents) ? cfg.agents : [];
  return agents.length === 0 || agents.includes(agentId || "main");
}

function bridge(api) {
  const s = state();
  const cfg = api.pluginConfig || {};
  if (!s.bridge) {
    s.bridge = new Bridge({
      rootDir: api.rootDir || HERE,
      binary: cfg.binary,
      home: cfg.home,
      timeoutMs: cfg.timeoutMs,
      config: cfg,
      logger: api.logger,
    });
  } else if (JSON.stringify(cfg) !== JSON.stringify(s.bridge.opts.config)) {
    // The config was edited (OpenClaw re-registers the plugin): tell the child.
    Object.assign(s.bridge.opts, { config: cfg, timeoutMs: cfg.timeoutMs });
    if (s.bridge.child) s.bridge.send({ jsonrpc: "2.0", method: "initialize", params: { client: "openclaw", config: cfg, pid: process.pid } });
  }
  return s.bridge;
}

// The host's tool list is cached in $METACLAW_HOME/cache/openclaw-tools.json
// so that a new process (every `openclaw agent --local` turn is one) offers
// the real schemas before its child has answered.
function toolsCacheFile(opts) {
  return path.join(metaclawHome(opts), "cache", "openclaw-tools.json");
}

// disabled reports `metaclaw disable` (the child passes everything through;
// the tools are not offered meanwhile).
function disabled(opts) {
  return fs.existsSync(path.join(metaclawHome(opts), "disabled"));
}

function cachedTools(opts) {
  const s = state();
  if (s.tools || s.toolsCacheRead) return s.tools;
  s.toolsCacheRead = true;
  try {
    const list = JSON.parse(fs.readFileSync(toolsCacheFile(opts), "utf8"));
    if (Array.isArray(list)) s.tools = list.filter((t) => t && Object.hasOwn(CONTRACT_TOOLS, t.name));
  } catch {
    // no cache yet
  }
  return s.tools;
}

async function refreshTools(b) {
  const s = state();
  try {
    const res = await b.call("tools.list", {});
    if (res && Array.isArray(res.tools)) {
      s.tools = res.tools.filter((t) => t && Object.hasOwn(CONTRACT_TOOLS, t.name));
      s.toolsAt = Date.now();
      const file = toolsCacheFile(b.opts);
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      fs.writeFileSync(file + ".tmp", JSON.stringify(s.tools), { mode: 0o600 });
      fs.renameSync(file + ".tmp", file);
    }
  } catch {
    // keep the previous list
  }
}

function textOf(result) {
  if (typeof result === "string") return result;
  try {
    return JSON.stringify(result, null, 2);
  } catch {
    return String(result);
  }
}

function makeTool(b, def, ctx) {
  return {
    name: def.name,
    label: def.name.replace(/_/g, " "),
    description: def.description || CONTRACT_TOOLS[def.name],
    parameters: def.input_schema && typeof def.input_schema === "object" ? def.input_schema : { type: "object", additionalProperties: true },
    async execute(toolCallId, params) {
      const res = await b.call("tools.call", {
        name: def.name,
        arguments: params ?? {},
        agent: ctx?.agentId,
        session: ctx?.sessionId,
        call_id: toolCallId,
      }, Math.max(10000, (b.opts.timeoutMs || DEFAULT_TIMEOUT_MS) * 5));
      const text = textOf(res?.result ?? res);
      return { content: [{ type: "text", text }], details: res?.result ?? null };
    },
  };
}

export default {
  id: PLUGIN_ID,
  name: "MetaClaw",
  description: "Injects the most relevant skills and memories into every turn and learns from every turn.",
  register(api) {
    const mode = api.registrationMode;
    if (mode === "cli-metadata" || mode === "setup-only") return;
    const cfg = api.pluginConfig || {};
    const b = bridge(api);
    if (api.config && !conversationAccess(api.config)) warnOnce("access", api.logger, NO_CONVERSATION_ACCESS);

    if (mode === "full" && typeof api.registerService === "function") {
      api.registerService({
        id: "metaclaw",
        start: () => {
          b.ensure();
          refreshTools(b);
        },
        stop: () => b.stopSoon(0),
      });
    }

    // forward sends one hook to the child and returns its answer (or
    // undefined: OpenClaw then proceeds as if the plugin were absent).
    const forward = (hook, key, timeoutMs) => async (event, ctx) => {
      if (key && !once(`${hook}:${key(event, ctx)}`)) return undefined;
      try {
        const res = await b.call(`openclaw.${hook}`, slim(hook, event, ctx), timeoutMs);
        return res && typeof res === "object" && Object.keys(res).length > 0 ? res : undefined;
      } catch (err) {
        api.logger?.debug?.(`[metaclaw] ${hook}: ${err?.message || err}`);
        return undefined;
      }
    };
    const run = (e, c) => c?.runId || e?.runId || `${c?.sessionId}:${c?.trace?.traceId}`;
    const sess = (e, c) => `${e?.sessionId || c?.sessionId}:${e?.reason || ""}:${Math.floor(Date.now() / 5000)}`;

    api.on("before_prompt_build", async (event, ctx) => {
      const res = forward("before_prompt_build", run)(event, ctx);
      if (cfg.tools !== false && Date.now() - state().toolsAt > 30000) refreshTools(b);
      return res;
    });
    api.on("llm_input", forward("llm_input", run));
    api.on("agent_end", forward("agent_end", run, 5000));
    api.on("llm_output", forward("llm_output", run, 5000));
    api.on("session_start", forward("session_start", sess, 1500));
    api.on("session_end", forward("session_end", sess, 1500));
    api.on("before_reset", forward("before_reset", sess, 1500));
    api.on("gateway_stop", () => {
      b.stopSoon(3000);
      return undefined;
    });

    if (cfg.tools !== false && typeof api.registerTool === "function") {
      const names = Object.keys(CONTRACT_TOOLS);
      // The factory never starts the child (discovery and inspection must
      // not spawn processes); hooks and the Gateway service do.
      api.registerTool((ctx) => {
        const s = state();
        if (!served(cfg, ctx?.agentId) || disabled(b.opts)) return [];
        if (b.child && Date.now() - s.toolsAt > 30000) refreshTools(b);
        const defs = cachedTools(b.opts) ?? names.map((name) => ({ name, description: CONTRACT_TOOLS[name] }));
        return defs.map((def) => makeTool(b, def, ctx));
      }, { names });
    }
  },
};
