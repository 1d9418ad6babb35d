// The console's sessions of every channel and its config view. Sessions: GET /api/agents/{id}/sessions of
// each agent, filtered here by agent, channel and a text (key, room,
// title, label); a transcript opens read-only; reset, compact and archive
// (DELETE) act through the session routes. Loaded after console.js.
"use strict";

const sess = { agents: [], rows: [], open: "" };

function sessPath(agent, id, rest) {
  return "/api/agents/" + encodeURIComponent(agent) + "/sessions" + (id ? "/" + encodeURIComponent(id) : "") + (rest || "");
}

async function loadAllSessions() {
  if (!sess.agents.length) {
    sess.agents = (await api("GET", "/api/agents")).agents;
    const sel = $("c-sess-agent");
    for (const a of sess.agents) sel.append(Object.assign(el("option", a), { value: a }));
  }
  const lists = await Promise.all(sess.agents.map(async (a) =>
    (await api("GET", sessPath(a))).sessions.map((s) => Object.assign({ agent: a }, s))));
  sess.rows = lists.flat().sort((x, y) => String(y.updatedAt).localeCompare(String(x.updatedAt)));
  const chSel = $("c-sess-channel");
  const have = new Set([...chSel.options].map((o) => o.value));
  for (const c of new Set(sess.rows.map((s) => s.channel || "internal"))) {
    if (!have.has(c)) chSel.append(Object.assign(el("option", c), { value: c }));
  }
  drawSessions();
  document.body.dataset.sessions = "ready";
}

function drawSessions() {
  const agent = $("c-sess-agent").value;
  const channel = $("c-sess-channel").value;
  const q = $("c-sess-q").value.trim().toLowerCase();
  const rows = sess.rows.filter((s) => (!agent || s.agent === agent) &&
    (!channel || (s.channel || "internal") === channel) &&
    (!q || [s.sessionKey, s.title, s.label, s.sessionId].some((v) => v && v.toLowerCase().includes(q))));
  const body = $("c-sessions").tBodies[0];
  body.replaceChildren(...rows.map((s) => {
    const tr = el("tr");
    tr.dataset.sessionId = s.sessionId;
    tr.dataset.channel = s.channel || "internal";
    if (s.sessionId === sess.open) tr.classList.add("open");
    const key = el("td", null, "key");
    key.append(el("span", s.sessionKey));
    if (s.title || s.label) key.append(el("span", [s.title, s.label].filter(Boolean).join(" · "), "title"));
    const btns = el("td");
    for (const [cls, label, fn] of [["open", "Open", () => openTranscript(s)], ["reset", "Reset", () => sessAct(s, "reset")],
      ["compact", "Compact", () => sessAct(s, "compact")], ["archive", "Archive", () => sessAct(s, "archive")]]) {
      const b = el("button", label, cls);
      b.type = "button";
      b.setAttribute("aria-label", label + " " + s.sessionKey);
      b.addEventListener("click", fn);
      btns.append(b);
    }
    tr.append(el("td", s.agent), el("td", s.channel || "internal"), key, el("td", s.messageCount), el("td", when(s.updatedAt)), btns);
    return tr;
  }));
  if (!rows.length) {
    const tr = el("tr");
    tr.append(Object.assign(el("td", sess.rows.length ? "No session matches." : "No sessions yet."), { colSpan: 6 }));
    body.append(tr);
  }
}

async function sessAct(s, how) {
  const ask = { reset: "Start this conversation over? The old transcript is archived.",
    archive: "Archive this session? Its chat starts a new one with its next message; the transcript is kept for recovery." };
  if (ask[how] && !confirm(ask[how])) return;
  try {
    if (how === "reset") await api("POST", sessPath(s.agent, s.sessionId, "/reset"));
    if (how === "compact") await api("POST", sessPath(s.agent, s.sessionId, "/compact"), {});
    if (how === "archive") await api("DELETE", sessPath(s.agent, s.sessionId));
    setStatus({ reset: "Started over: ", compact: "Compacted: ", archive: "Archived: " }[how] + s.sessionKey);
    if (sess.open === s.sessionId) closeTranscript();
  } catch (err) { report(err); }
  try { await loadAllSessions(); } catch (err) { report(err); }
}

// ---- a transcript, read-only: the chat page's rendering (Markdown replies,
// tool chips in order with their results).

function closeTranscript() {
  sess.open = "";
  $("c-transcript").hidden = true;
  $("c-tr-messages").replaceChildren();
  drawSessions();
}

async function openTranscript(s) {
  let data;
  try {
    data = await api("GET", sessPath(s.agent, s.sessionId));
  } catch (err) { report(err); return; }
  sess.open = s.sessionId;
  $("c-tr-title").textContent = s.sessionKey + " (" + s.agent + ", read-only)";
  const box = $("c-tr-messages");
  box.replaceChildren();
  const chips = new Map();
  const add = (cls, text) => box.appendChild(el("div", text, "msg " + cls));
  for (const m of data.messages) {
    if (m.role === "toolResult") {
      const chip = chips.get(m.toolCallId) || add("tool", "tool: " + (m.toolName || "?"));
      const pre = el("pre", (m.isError ? "failed: " : "→ ") + (m.content || []).filter((c) => c.type === "text").map((c) => c.text).join("").slice(0, 2000), "result");
      chip.append(pre);
      continue;
    }
    if (m.role !== "user" && m.role !== "assistant") continue;
    let text = "";
    const flush = () => {
      if (!text) return;
      if (m.role === "user") add("user", text); else Markdown.render(add("assistant", ""), text);
      text = "";
    };
    for (const c of m.content || []) {
      if (c.type === "text" && c.text) text += c.text;
      if (c.type === "image") { flush(); add(m.role, "[image]"); }
      if (c.type === "toolCall") {
        flush();
        const chip = add("tool", "tool call: " + c.name);
        chip.dataset.tool = c.name;
        if (c.id) chips.set(c.id, chip);
      }
    }
    flush();
  }
  $("c-transcript").hidden = false;
  drawSessions();
  $("c-tr-close").focus();
}

$("c-tr-close").addEventListener("click", closeTranscript);
$("c-sess-filter").addEventListener("submit", (ev) => { ev.preventDefault(); loadAllSessions().catch(report); });
$("c-sess-channel").addEventListener("change", drawSessions);
$("c-sess-agent").addEventListener("change", drawSessions);
$("c-sess-q").addEventListener("input", drawSessions);

loadAllSessions().catch(report);

// ---- the effective config (GET /api/config), read-only, secrets redacted
// by the daemon; loaded when first shown.

$("c-config-box").addEventListener("toggle", async () => {
  if (!$("c-config-box").open) return;
  try {
    const data = await api("GET", "/api/config");
    $("c-config").textContent = JSON.stringify(data.config, null, 2);
  } catch (err) { report(err); }
});
