// MetaClaw dashboard: vanilla JS, no dependencies. Everything shown comes
// from the host's JSON API; text is always set with textContent (skills and
// memories are partly written by an LLM and must never become markup).
"use strict";

const KEY = "metaclaw.proxyKey";
const $ = (sel, root = document) => root.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

class AuthError extends Error {}

async function api(path, opts = {}) {
  const headers = { "Content-Type": "application/json" };
  const key = localStorage.getItem(KEY);
  if (key) headers["Authorization"] = "Bearer " + key;
  const res = await fetch(path, { ...opts, headers: { ...headers, ...(opts.headers || {}) } });
  if (res.status === 401) throw new AuthError("the proxy key is missing or wrong");
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = { raw: text }; }
  if (!res.ok) {
    const msg = (body && body.error && (body.error.message || body.error)) || res.statusText;
    throw new Error(`${res.status}: ${msg}`);
  }
  return body;
}

function showLogin(message) {
  $("#login").hidden = false;
  $("#login-error").textContent = message || "";
  $("#login-key").focus();
}

$("#login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  localStorage.setItem(KEY, $("#login-key").value.trim());
  try {
    await api("/v1/status");
    $("#login").hidden = true;
    start();
  } catch (e) {
    showLogin(e.message);
  }
});

function flash(msg, isError) {
  const s = $("#status-line");
  s.textContent = msg;
  s.className = isError ? "error" : "";
}

async function guarded(fn) {
  try { await fn(); }
  catch (e) {
    if (e instanceof AuthError) showLogin(e.message);
    else flash(e.message, true);
  }
}

// ---- tabs and keyboard ----
const tabs = ["skills", "memories", "activity", "training"];
const loaders = {};
function selectTab(name) {
  for (const t of tabs) {
    const on = t === name;
    $("#tab-" + t).setAttribute("aria-selected", on);
    $("#tab-" + t).tabIndex = on ? 0 : -1;
    $("#" + t).hidden = !on;
  }
  location.hash = name;
  guarded(loaders[name]);
}
document.querySelectorAll("nav button").forEach((b) => b.addEventListener("click", () => selectTab(b.dataset.tab)));

// A list whose items can be moved through with j/k and opened with Enter.
function listNav(list, open) {
  list.addEventListener("keydown", (ev) => {
    const items = [...list.children];
    const i = items.indexOf(document.activeElement);
    if (ev.key === "j" || ev.key === "ArrowDown") { items[Math.min(i + 1, items.length - 1)]?.focus(); ev.preventDefault(); }
    if (ev.key === "k" || ev.key === "ArrowUp") { items[Math.max(i - 1, 0)]?.focus(); ev.preventDefault(); }
    if (ev.key === "Enter" && i >= 0) open(items[i]);
  });
}

document.addEventListener("keydown", (ev) => {
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (typing) { if (ev.key === "Escape") document.activeElement.blur(); return; }
  if (ev.key >= "1" && ev.key <= String(tabs.length)) selectTab(tabs[Number(ev.key) - 1]);
  if (ev.key === "/") {
    const current = tabs.find((t) => !$("#" + t).hidden);
    const box = current === "skills" ? $("#skills-q") : current === "memories" ? $("#mem-q") : null;
    if (box) { box.focus(); ev.preventDefault(); }
  }
  if (ev.key === "j" || ev.key === "k") {
    const current = tabs.find((t) => !$("#" + t).hidden);
    const list = current === "skills" ? $("#skills-list") : current === "memories" ? $("#mem-list") : null;
    if (list && list.firstElementChild && !list.contains(document.activeElement)) list.firstElementChild.focus();
  }
});

function debounce(fn, ms) {
  let t;
  return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
}

// ---- charts (SVG, no library) ----
const palette = ["#2b6cb0", "#2f855a", "#b7791f", "#c53030", "#6b46c1", "#2c7a7b", "#b83280", "#4a5568"];
const SVGNS = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function barChart(target, labels, series, legend) {
  target.replaceChildren();
  const W = target.clientWidth || 800, H = target.clientHeight || 220, pad = 32;
  target.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const totals = labels.map((_, i) => series.reduce((s, x) => s + x.values[i], 0));
  const realMax = Math.max(0, ...totals);
  const max = Math.max(1, realMax);
  const bw = Math.min(80, (W - pad * 2) / Math.max(1, labels.length)); // a few wide bars stay readable
  labels.forEach((label, i) => {
    let y = H - pad;
    series.forEach((s, si) => {
      const h = (s.values[i] / max) * (H - pad * 2);
      if (h > 0) {
        const r = svg("rect", { x: pad + i * bw + 1, y: y - h, width: Math.max(1, bw - 2), height: h, fill: palette[si % palette.length] });
        const title = svg("title", {});
        title.textContent = `${label} ${s.name}: ${s.values[i]}`;
        r.append(title);
        target.append(r);
      }
      y -= h;
    });
    if (labels.length <= 31 && (i % Math.ceil(labels.length / 10) === 0)) {
      const t = svg("text", { x: pad + i * bw + bw / 2, y: H - pad + 14, "text-anchor": "middle" });
      t.textContent = /^\d{4}-\d{2}-\d{2}$/.test(label) ? label.slice(5) : label;
      target.append(t);
    }
  });
  const t = svg("text", { x: 4, y: pad - 8 });
  t.textContent = `max ${realMax}`;
  target.append(t);
  if (legend) {
    legend.replaceChildren();
    series.forEach((s, si) => legend.append(el("span", { class: "swatch c" + (si % palette.length) }), s.name));
  }
}

function lineChart(target, values) {
  target.replaceChildren();
  const W = target.clientWidth || 800, H = target.clientHeight || 220, pad = 32;
  target.setAttribute("viewBox", `0 0 ${W} ${H}`);
  if (!values.length) {
    const t = svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" });
    t.textContent = "no turns yet";
    target.append(t);
    return;
  }
  const realMax = Math.max(...values);
  const max = Math.max(1, realMax);
  const step = (W - pad * 2) / Math.max(1, values.length - 1);
  const pts = values.map((v, i) => `${pad + i * step},${H - pad - (v / max) * (H - pad * 2)}`).join(" ");
  target.append(svg("polyline", { points: pts, fill: "none", stroke: palette[0], "stroke-width": 2 }));
  const t = svg("text", { x: 4, y: pad - 8 });
  t.textContent = `max ${realMax} tokens`;
  target.append(t);
}

// ---- activity ----
loaders.activity = async () => {
  const [status, act, recent] = await Promise.all([api("/v1/status"), api("/v1/activity?days=30"), api("/v1/turns/recent?limit=200")]);
  const cards = $("#status-cards");
  cards.replaceChildren();
  const card = (label, value) => cards.append(el("div", { class: "card" }, el("b", {}, value), label));
  const c = status.counts || {};
  card("turns", c.turns ?? 0);
  card("sessions", c.sessions ?? 0);
  card("skills", c.skills ?? 0);
  card("memories", c.memories ?? 0);
  card("injected tokens", c.injected_tokens ?? 0);
  card("pending jobs", (status.jobs || {}).pending ?? 0);

  const days = [];
  const start = new Date(act.since + "T00:00:00Z");
  for (let i = 0; i < act.days; i++) days.push(new Date(start.getTime() + i * 86400000).toISOString().slice(0, 10));
  const agents = [...new Set(act.buckets.map((b) => b.agent))].sort();
  const series = agents.map((a) => ({ name: a, values: days.map((d) => (act.buckets.find((b) => b.day === d && b.agent === a) || { turns: 0 }).turns) }));
  barChart($("#chart-turns"), days, series, $("#legend-turns"));
  const sessions = agents.map((a) => ({ name: a, values: days.map((d) => (act.buckets.find((b) => b.day === d && b.agent === a) || { sessions: 0 }).sessions) }));
  barChart($("#chart-sessions"), days, sessions, null);
  lineChart($("#chart-injected"), recent.turns.slice().reverse().map((t) => t.injected_tokens));

  const tbody = $("#usage tbody");
  tbody.replaceChildren();
  const usage = Object.entries(act.llm_usage || {}).sort();
  barChart($("#chart-usage"), usage.map(([p]) => p), [
    { name: "input tokens", values: usage.map(([, u]) => u.input_tokens) },
    { name: "output tokens", values: usage.map(([, u]) => u.output_tokens) },
  ], $("#legend-usage"));
  if (!usage.length) tbody.append(el("tr", {}, el("td", { colspan: 5, class: "muted" }, "no calls yet")));
  for (const [purpose, u] of usage) tbody.append(el("tr", {}, el("td", {}, purpose), el("td", {}, u.calls), el("td", {}, u.failed), el("td", {}, u.input_tokens), el("td", {}, u.output_tokens)));
  $("#rl-state").textContent = status.rl ? `${status.rl.state}: ${status.rl.reason}` : "";
  renderScheduler(status.scheduler);
  flash(`${status.version} · mode ${status.mode} · up ${Math.round(status.uptime_seconds)} s`);
};

// stepChart plots one value per training step (loss, mean reward), with
// negative values and a zero line; points carry their value as a tooltip.
function stepChart(target, points, what) {
  target.replaceChildren();
  const W = target.clientWidth || 800, H = target.clientHeight || 220, pad = 36;
  target.setAttribute("viewBox", `0 0 ${W} ${H}`);
  if (!points.length) {
    const t = svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" });
    t.textContent = "no training step yet";
    target.append(t);
    return;
  }
  let lo = Math.min(0, ...points.map((p) => p.y)), hi = Math.max(0, ...points.map((p) => p.y));
  if (hi === lo) hi = lo + 1;
  const x0 = points[0].x, x1 = points[points.length - 1].x;
  const X = (x) => pad + (x1 === x0 ? (W - pad * 2) / 2 : ((x - x0) / (x1 - x0)) * (W - pad * 2));
  const Y = (y) => H - pad - ((y - lo) / (hi - lo)) * (H - pad * 2);
  target.append(svg("line", { x1: pad, x2: W - pad, y1: Y(0), y2: Y(0), stroke: "currentColor", "stroke-opacity": 0.25 }));
  target.append(svg("polyline", { points: points.map((p) => `${X(p.x)},${Y(p.y)}`).join(" "), fill: "none", stroke: palette[0], "stroke-width": 2 }));
  for (const p of points) {
    const c = svg("circle", { cx: X(p.x), cy: Y(p.y), r: 3, fill: palette[0] });
    const title = svg("title", {});
    title.textContent = `step ${p.x}: ${what} ${p.y.toPrecision(4)}`;
    c.append(title);
    target.append(c);
  }
  const top = svg("text", { x: 4, y: pad - 10 });
  top.textContent = `${what}: ${lo.toPrecision(3)} … ${hi.toPrecision(3)}`;
  const first = svg("text", { x: pad, y: H - pad + 16, "text-anchor": "middle" });
  first.textContent = `step ${x0}`;
  const last = svg("text", { x: W - pad, y: H - pad + 16, "text-anchor": "middle" });
  last.textContent = `step ${x1}`;
  target.append(top, first, last);
}

// ---- training (GET /v1/rl/training, /v1/rl/steps, /v1/rl/samples) ----
loaders.training = async () => {
  let st;
  try {
    st = await api("/v1/rl/training");
  } catch (e) {
    if (e instanceof AuthError) throw e;
    $("#training-state").textContent = "RL training is not running on this host (mode skills_only, or RL is off).";
    $("#training-cards").replaceChildren();
    return;
  }
  if (st.state === "off") {
    $("#training-state").textContent = "RL training is off: " + st.reason;
    $("#training-cards").replaceChildren();
    return;
  }
  const state = $("#samples-state").value;
  const [steps, smp] = await Promise.all([api("/v1/rl/steps?limit=500"), api("/v1/rl/samples?limit=50" + (state ? "&state=" + state : ""))]);
  const cards = $("#training-cards");
  cards.replaceChildren();
  const card = (label, value) => cards.append(el("div", { class: "card" }, el("b", {}, value), label));
  const last = st.last_step;
  card("step", st.step);
  card("last loss", last && last.loss != null ? last.loss.toPrecision(4) : "—");
  card("mean reward", last && last.mean_reward != null ? last.mean_reward.toFixed(2) : "—");
  card("ready samples", `${st.ready} / ${st.batch_size}`);
  card("last checkpoint", st.last_checkpoint ? "step " + st.last_checkpoint.step : "—");
  $("#training-state").textContent = `${st.state}: ${st.reason} · trains ${st.trains}` + (st.model_id ? ` · model ${st.model_id}` : "");

  const rows = steps.steps.slice().reverse();
  stepChart($("#chart-loss"), rows.filter((r) => r.loss != null).map((r) => ({ x: r.step, y: r.loss })), "loss");
  stepChart($("#chart-reward"), rows.filter((r) => r.mean_reward != null).map((r) => ({ x: r.step, y: r.mean_reward })), "mean reward");

  const sb = $("#training-samples tbody");
  sb.replaceChildren();
  if (!smp.samples.length) sb.append(el("tr", {}, el("td", { colspan: 9, class: "muted" }, state ? `no ${state} samples` : "no samples yet")));
  for (const s of smp.samples) {
    const stateText = s.state_reason ? `${s.state} (${s.state_reason})` : s.state;
    sb.append(el("tr", { "data-id": s.id }, el("td", {}, s.id), el("td", {}, new Date(s.created_at).toLocaleString()), el("td", {}, `${s.session_id} #${s.seq}`),
      el("td", {}, stateText), el("td", {}, s.reward == null ? "—" : (s.reward > 0 ? "+" : "") + s.reward),
      el("td", { title: s.judge_text || "" }, s.judge_votes.length ? s.judge_votes.join(" ") : "—"), el("td", {}, s.step || "—"),
      el("td", {}, s.instruction), el("td", {}, s.response)));
  }
  const tb = $("#training-steps tbody");
  tb.replaceChildren();
  if (!steps.steps.length) tb.append(el("tr", {}, el("td", { colspan: 7, class: "muted" }, "no training step yet")));
  for (const r of steps.steps) {
    tb.append(el("tr", {}, el("td", {}, r.step + (r.replays ? ` (replayed ${r.replays}×)` : "")), el("td", {}, new Date(r.finished_at).toLocaleString()),
      el("td", {}, `${r.samples} (${r.datums} learning)`), el("td", {}, r.loss == null ? "—" : r.loss.toPrecision(4)),
      el("td", {}, r.mean_reward == null ? "—" : r.mean_reward.toFixed(2)), el("td", {}, (r.duration_ms / 1000).toFixed(2) + " s"), el("td", {}, r.checkpoint_path || "")));
  }
};
$("#samples-state").addEventListener("change", () => guarded(loaders.training));

// ---- training scheduler (status.scheduler, docs/status.md) ----
function renderScheduler(sc) {
  const tbody = $("#scheduler tbody");
  tbody.replaceChildren();
  const row = (k, v) => tbody.append(el("tr", {}, el("th", {}, k), el("td", {}, v)));
  if (!sc) { row("state", "not reported by this host"); return; }
  if (!sc.enabled) { row("state", `off: ${sc.reason}`); return; }
  const when = (t) => new Date(t).toLocaleString();
  row("state", `${sc.state}${sc.phase ? " (" + sc.phase + ")" : ""} since ${when(sc.since)}: ${sc.reason}`);
  row("why", sc.now);
  if (sc.window) row("window", `open since ${when(sc.window.opened_at)}, ${sc.window.until ? "until " + when(sc.window.until) : "until the user returns"}`);
  else row("next window", sc.next_window ? `${when(sc.next_window.start)}: ${sc.next_window.reason}` : "none expected");
  if (sc.paused) row("paused", sc.paused_until ? "until " + when(sc.paused_until) : "until metaclaw scheduler resume");
  row("idle source", sc.idle_source);
  row("trainer", sc.trainer + (sc.trainer_note ? ": " + sc.trainer_note : ""));
  row("last step", sc.last_step ? `step ${sc.last_step.step} at ${when(sc.last_step.at)}, ${sc.last_step.samples} samples, ${sc.last_step.duration_seconds.toFixed(1)} s (average ${sc.step_avg_seconds.toFixed(1)} s)` : "none yet");
}

// ---- skills ----
let selectedSkill = null;
loaders.skills = async () => {
  const q = $("#skills-q").value.trim();
  const status = $("#skills-status").value;
  const params = new URLSearchParams();
  if (q) params.set("q", q);
  if (status) params.set("status", status);
  const data = await api("/v1/skills?" + params);
  const list = $("#skills-list");
  list.replaceChildren();
  const skills = data.skills || [];
  if (!skills.length) list.append(el("li", { class: "muted" }, q ? "no skill matches" : "no skills yet: run metaclaw skills install-bank"));
  for (const s of skills) {
    const li = el("li", { tabindex: 0, role: "option", "data-name": s.name, "aria-selected": s.name === selectedSkill },
      s.name, el("span", { class: "badge " + (s.status || "active") }, s.status || "active"), el("span", { class: "sub" }, s.description || ""));
    li.addEventListener("click", () => guarded(() => openSkill(s.name)));
    list.append(li);
  }
};

async function openSkill(name) {
  selectedSkill = name;
  document.querySelectorAll("#skills-list li").forEach((li) => li.setAttribute("aria-selected", li.dataset.name === name));
  const [data, hist] = await Promise.all([api("/v1/skills/" + encodeURIComponent(name)), api("/v1/skills/" + encodeURIComponent(name) + "/history").catch(() => ({ history: [] }))]);
  const s = data.skill || data;
  const view = $("#skill-view");
  const act = (verb) => guarded(async () => {
    await api(`/v1/skills/${encodeURIComponent(name)}/${verb}`, { method: "POST", body: "{}" });
    flash(`${verb}: ${name}`);
    await loaders.skills();
    await openSkill(name);
  });
  const actions = el("div", { class: "actions" });
  if (s.status === "pending") {
    actions.append(el("button", { class: "primary", onclick: () => act("approve") }, "Approve"), el("button", { class: "danger", onclick: () => act("reject") }, "Reject"));
  }
  if (s.status === "disabled") actions.append(el("button", { onclick: () => act("enable") }, "Enable"));
  else if (s.status !== "pending") actions.append(el("button", { onclick: () => act("disable") }, "Disable"));
  const history = el("ul", {});
  for (const h of hist.history || []) {
    const when = h.at ? new Date(h.at).toLocaleString() : "";
    history.append(el("li", {}, [h.action, `generation ${h.generation ?? "?"}`, when, h.source, h.reason].filter(Boolean).join(" · ")));
  }
  if (!(hist.history || []).length) history.append(el("li", { class: "muted" }, "no changes recorded"));
  view.replaceChildren(
    el("h2", {}, s.name, el("span", { class: "badge " + (s.status || "active") }, s.status || "active")),
    el("p", {}, s.description || ""),
    el("p", { class: "muted" }, [s.category, (s.tags || []).join(", "), s.agents && s.agents.length ? "agents: " + s.agents.join(", ") : "", "generation " + (s.generation ?? 1), s.source || ""].filter(Boolean).join(" · ")),
    actions,
    el("pre", {}, s.body || ""),
    el("h3", {}, "History"),
    history,
  );
}

$("#skills-q").addEventListener("input", debounce(() => guarded(loaders.skills), 200));
$("#skills-status").addEventListener("change", () => guarded(loaders.skills));
listNav($("#skills-list"), (li) => li.dataset.name && guarded(() => openSkill(li.dataset.name)));

// ---- memories ----
let selectedMemory = null;
const memID = (m) => m.memory_id || m.id;
loaders.memories = async () => {
  const q = $("#mem-q").value.trim();
  const scope = $("#mem-scope").value.trim();
  const params = new URLSearchParams({ limit: "50" });
  if (q) params.set("q", q);
  if (scope) params.set("scope", scope);
  const data = await api((q ? "/v1/memory/search?" : "/v1/memory/list?") + params);
  const items = data.memories || data.results || data.units || [];
  const list = $("#mem-list");
  list.replaceChildren();
  if (!items.length) list.append(el("li", { class: "muted" }, q ? "no memory matches" : "no memories yet"));
  for (const m of items) {
    const li = el("li", { tabindex: 0, role: "option", "data-id": memID(m), "aria-selected": memID(m) === selectedMemory },
      m.content || m.text || "", el("span", { class: "sub" }, `${m.type || m.memory_type || ""} · ${m.scope || m.scope_id || ""}`));
    li.addEventListener("click", () => guarded(() => openMemory(memID(m))));
    list.append(li);
  }
  const recent = await api("/v1/turns/recent?limit=20");
  const tbody = $("#recent-turns tbody");
  tbody.replaceChildren();
  if (!recent.turns.length) tbody.append(el("tr", {}, el("td", { colspan: 7, class: "muted" }, "no turns recorded yet")));
  for (const t of recent.turns) {
    tbody.append(el("tr", {}, el("td", {}, new Date(t.at).toLocaleString()), el("td", {}, t.agent), el("td", {}, t.session_id), el("td", {}, `${t.turn_type} #${t.turn_index}`),
      el("td", {}, t.status), el("td", {}, t.injected.join(", ") || "—"), el("td", {}, t.injected_tokens)));
  }
};

async function openMemory(id) {
  selectedMemory = id;
  document.querySelectorAll("#mem-list li").forEach((li) => li.setAttribute("aria-selected", li.dataset.id === String(id)));
  const data = await api("/v1/memory/" + encodeURIComponent(id));
  const m = data.memory || data;
  const view = $("#mem-view");
  const text = el("textarea", { rows: 4, "aria-label": "Memory text" });
  text.value = m.content || m.text || "";
  const save = () => guarded(async () => {
    await api("/v1/memory/" + encodeURIComponent(id), { method: "PATCH", body: JSON.stringify({ content: text.value }) });
    flash("saved");
    await loaders.memories();
    await openMemory(id);
  });
  const forget = () => guarded(async () => {
    if (!confirm("Forget this memory? An audit record is kept.")) return;
    await api("/v1/memory/forget", { method: "POST", body: JSON.stringify({ memory_id: id }) });
    flash("forgotten");
    selectedMemory = null;
    view.replaceChildren(el("p", { class: "muted" }, "Forgotten."));
    await loaders.memories();
  });
  view.replaceChildren(
    el("h2", {}, `${m.type || m.memory_type || "memory"}`, el("span", { class: "badge " + (m.status || "") }, m.status || "active")),
    text,
    el("div", { class: "actions" }, el("button", { class: "primary", onclick: save }, "Save"), el("button", { class: "danger", onclick: forget }, "Forget")),
    el("p", { class: "muted" }, [`scope ${m.scope || m.scope_id || ""}`, m.importance != null ? `importance ${m.importance}` : "", m.confidence != null ? `confidence ${m.confidence}` : "",
      (m.entities || m.tags || []).join(", "), m.session_id ? `from session ${m.session_id}` : "", m.created_at ? `created ${m.created_at}` : "", m.updated_at ? `updated ${m.updated_at}` : ""].filter(Boolean).join(" · ")),
  );
}

$("#mem-q").addEventListener("input", debounce(() => guarded(loaders.memories), 200));
$("#mem-scope").addEventListener("change", () => guarded(loaders.memories));
listNav($("#mem-list"), (li) => li.dataset.id && guarded(() => openMemory(li.dataset.id)));

window.addEventListener("hashchange", () => {
  const name = location.hash.slice(1);
  if (tabs.includes(name) && $("#" + name).hidden) selectTab(name);
});

function start() {
  const initial = tabs.includes(location.hash.slice(1)) ? location.hash.slice(1) : "activity";
  selectTab(initial);
}

guarded(async () => {
  try {
    await api("/v1/status");
    start();
  } catch (e) {
    if (e instanceof AuthError) showLogin();
    else throw e;
  }
});
