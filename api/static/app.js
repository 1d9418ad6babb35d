// The gateway web page: a session sidebar and a chat with streamed replies.
// Plain JS, no build step. Everything shown is set with textContent, except
// an assistant's reply, which is Markdown rendered and sanitised by
// markdown.js.
"use strict";

const state = {
  agent: "",
  sessionId: "", // "" = a new chat
  sessionKey: "", // the open session's key, to follow it over a reset
  sessions: [],
  busy: false,
};

// ---- HTTP -----------------------------------------------------------------

function agentPath(rest) {
  return "/api/agents/" + encodeURIComponent(state.agent) + rest;
}

onToken(() => start());

// ---- status line -----------------------------------------------------------

function setStatus(text) { $("status").textContent = text || ""; }

function report(err) {
  if (err instanceof AuthError) { setStatus("Enter the API token to continue."); return; }
  setStatus(String(err && err.message ? err.message : err));
}

// ---- location: #<agent>/<sessionId> keeps the open session over a reload --

function readHash() {
  const h = decodeURIComponent(location.hash.replace(/^#/, ""));
  const i = h.indexOf("/");
  if (i < 0) return { agent: h, sessionId: "" };
  return { agent: h.slice(0, i), sessionId: h.slice(i + 1) };
}

function writeHash() {
  const h = "#" + encodeURIComponent(state.agent) + (state.sessionId ? "/" + encodeURIComponent(state.sessionId) : "");
  if (location.hash !== h) history.replaceState(null, "", h);
}

// ---- messages --------------------------------------------------------------

function addBubble(kind, text) {
  const div = document.createElement("div");
  div.className = "msg " + kind;
  div.textContent = text;
  $("messages").appendChild(div);
  div.scrollIntoView({ block: "end" });
  return div;
}

// addMedia shows the files of a reply (a "media" event): each is fetched
// from the API with the token (GET /api/media/<sha256>) and shown from a
// blob URL: pictures inline, sound and video with controls, anything else
// as a download link with its name and size. A caption is Markdown.
function addMedia(files) {
  for (const f of files || []) {
    const div = addBubble("assistant media", "");
    if (f.caption) {
      const cap = document.createElement("div");
      cap.className = "caption";
      Markdown.render(cap, f.caption);
      div.append(cap);
    }
    const label = (f.name || f.kind || "file") + " (" + humanSize(f.size || 0) + ")";
    const holder = document.createElement("div");
    holder.textContent = "loading " + label + "…";
    div.append(holder);
    fetch(f.url, { headers: headers() }).then(async (res) => {
      if (!res.ok) throw new Error("HTTP " + res.status);
      const url = URL.createObjectURL(await res.blob());
      let el;
      if (f.kind === "image") {
        el = document.createElement("img");
        el.alt = f.name || "image";
      } else if (f.kind === "audio" || f.kind === "voice") {
        el = document.createElement("audio");
        el.controls = true;
      } else if (f.kind === "video") {
        el = document.createElement("video");
        el.controls = true;
      }
      const a = document.createElement("a");
      a.href = url;
      a.download = f.name || "file";
      a.textContent = label;
      holder.replaceChildren(...(el ? [el, a] : [a]));
      if (el) el.src = url;
    }).catch((e) => { holder.textContent = label + ": not available (" + e.message + ")"; });
  }
}

function humanSize(n) {
  if (n < 1024) return n + " B";
  if (n < 1048576) return (n / 1024).toFixed(1) + " KB";
  return (n / 1048576).toFixed(1) + " MB";
}

// addReply shows an assistant's text as Markdown (markdown.js sanitises it).
function addReply(text) {
  const div = addBubble("assistant", "");
  Markdown.render(div, text);
  return div;
}

// addImage shows an image block of a transcript inline (data: URLs only,
// as the CSP allows).
function addImage(kind, c) {
  const div = addBubble(kind, "");
  if (c.data && /^image\/(png|jpeg|gif|webp)$/.test(c.mimeType || "")) {
    const img = document.createElement("img");
    img.alt = "image";
    img.src = "data:" + c.mimeType + ";base64," + c.data;
    div.append(img);
  } else {
    div.textContent = "[image]";
  }
  return div;
}

// addTool shows a tool call as a chip in the order the agent made it: its
// name, and on opening its arguments and (after a reload) its result.
function addTool(name, args) {
  const d = document.createElement("details");
  d.className = "msg tool";
  d.dataset.tool = name || "?";
  const s = document.createElement("summary");
  s.textContent = "tool call: " + (name || "?");
  d.append(s);
  if (args && Object.keys(args).length) {
    const pre = document.createElement("pre");
    pre.className = "args";
    pre.textContent = JSON.stringify(args, null, 2);
    d.append(pre);
  }
  $("messages").appendChild(d);
  d.scrollIntoView({ block: "end" });
  return d;
}

// addChoices shows a question with buttons (the message tool's ask): live
// (a choices event) or from the history (its questions, signed again by
// the gateway). A click disables them all, marks the one chosen and sends
// the press to the session that asked; the gateway takes one press per
// question. A question the history says was answered is drawn as a click
// leaves it: every button disabled, the chosen one marked. One it says
// expired (unanswered, too old for a press) has every button disabled and
// a note saying so.
function addChoices(q) {
  const d = document.createElement("div");
  d.className = "msg choices";
  const p = document.createElement("div");
  p.className = "bubble";
  p.textContent = q.text || "";
  d.append(p);
  const row = document.createElement("div");
  row.className = "buttons";
  for (const c of q.choices || []) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = c.label;
    b.addEventListener("click", () => {
      if (state.busy) return;
      for (const x of row.querySelectorAll("button")) x.disabled = true;
      b.classList.add("chosen");
      // The view shows one session: the one that asked (a new chat has
      // its id once the asking turn is done).
      send(c.label, { messageId: q.messageId, data: c.data, label: c.label });
    });
    if (q.answered) {
      b.disabled = true;
      if (c.label === q.chosen) b.classList.add("chosen");
    } else if (q.expired) {
      b.disabled = true;
    }
    row.append(b);
  }
  d.append(row);
  if (!q.answered && q.expired) {
    const note = document.createElement("div");
    note.className = "note";
    note.textContent = "This question has expired.";
    d.append(note);
  }
  $("messages").appendChild(d);
  d.scrollIntoView({ block: "end" });
}

function setToolResult(chip, text, isError) {
  const pre = document.createElement("pre");
  pre.className = "result";
  pre.textContent = (isError ? "failed: " : "→ ") + text.slice(0, 2000);
  if (isError) chip.classList.add("failed");
  chip.append(pre);
}

// renderMessage shows one transcript message; its blocks keep their order
// (text, tool call, text), as they streamed. chips maps tool call ids to
// their chips so that a result joins its call.
function renderMessage(m, chips) {
  const kind = m.role === "user" ? "user" : "assistant";
  let text = "";
  const flush = () => {
    if (text) kind === "user" ? addBubble("user", text) : addReply(text);
    text = "";
  };
  if (m.role === "toolResult") {
    const texts = (m.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
    const chip = chips.get(m.toolCallId) || addTool(m.toolName || "tool");
    setToolResult(chip, texts, m.isError);
    return;
  }
  if (m.role !== "user" && m.role !== "assistant") return;
  for (const c of m.content || []) {
    if (c.type === "text" && c.text) text += c.text;
    if (c.type === "image") { flush(); addImage(kind, c); }
    if (c.type === "toolCall") {
      flush();
      const chip = addTool(c.name, c.arguments);
      if (c.id) chips.set(c.id, chip);
    }
  }
  flush();
}

function currentView() {
  return state.sessions.find((s) => s.sessionId === state.sessionId);
}

function renderInfo() {
  const s = currentView();
  const info = $("session-info");
  const input = $("input");
  if (!state.sessionId) {
    info.textContent = "New chat";
  } else if (s) {
    info.textContent = [s.sessionKey, s.model ? "model " + s.model : "", s.messageCount + " messages",
      s.contextTokens ? "~" + s.contextTokens + " context tokens" : ""].filter(Boolean).join(" · ");
  } else {
    info.textContent = state.sessionId;
  }
  const readOnly = s && s.channel && s.channel !== "web";
  input.disabled = !!readOnly;
  $("send").disabled = !!readOnly || state.busy;
  input.placeholder = readOnly ? "This session belongs to " + s.channel + "; it can be read here, not continued."
    : "Message (Enter sends, Shift+Enter adds a line)";
}

// mediaOf lists the files a message tool's send_media result records (the
// transcript's trace of a reply's files), as addMedia takes them; nothing
// for any other message.
function mediaOf(m) {
  if (m.role !== "toolResult" || m.toolName !== "message" || m.isError) return [];
  const text = (m.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
  let r;
  try { r = JSON.parse(text); } catch (_) { return []; }
  if (!r || r.action !== "send_media" || !Array.isArray(r.files)) return [];
  return r.files.filter((f) => /^[0-9a-f]{64}$/.test(f.sha256 || "")).map((f, i) => ({
    url: "/api/media/" + f.sha256, kind: f.kind, mimeType: f.mimeType, name: f.fileName, size: f.size,
    caption: i === 0 ? r.caption : "",
  }));
}

async function loadHistory() {
  $("messages").textContent = "";
  if (!state.sessionId) { renderInfo(); return; }
  try {
    const data = await api("GET", agentPath("/sessions/" + encodeURIComponent(state.sessionId)));
    const chips = new Map();
    // A question with buttons follows its ask call, as it did live.
    const questions = new Map((data.questions || []).map((q) => [q.toolCallId, q]));
    // A turn's files follow its text, as they did live: they are shown
    // when the next turn starts (a user message) or the history ends.
    let media = [];
    for (const m of data.messages) {
      if (m.role === "user" && media.length) { addMedia(media); media = []; }
      renderMessage(m, chips);
      if (m.role === "toolResult" && questions.has(m.toolCallId)) addChoices(questions.get(m.toolCallId));
      media = media.concat(mediaOf(m));
    }
    if (media.length) addMedia(media);
    setStatus("");
  } catch (err) {
    report(err);
    state.sessionId = "";
    writeHash();
  }
  renderInfo();
}

// ---- sidebar ---------------------------------------------------------------

function sessionTitle(s) {
  return s.title || s.label || s.sessionKey;
}

function renderSessions() {
  const ul = $("sessions");
  // A refresh (a reply finished, another tab changed something) must not
  // wipe a title being typed: the rename's end loads the list again.
  if (ul.querySelector("input.rename")) return;
  ul.textContent = "";
  for (const s of state.sessions) {
    const li = document.createElement("li");
    li.dataset.sessionId = s.sessionId;
    if (s.sessionId === state.sessionId) li.classList.add("active");

    const title = document.createElement("button");
    title.type = "button";
    title.className = "title";
    title.textContent = sessionTitle(s);
    title.title = s.sessionKey + (s.updatedAt ? "\nupdated " + new Date(s.updatedAt).toLocaleString() : "");
    title.addEventListener("click", () => switchTo(s.sessionId));

    const rename = actionButton("rename", "✎", "Rename", () => startRename(li, s));
    const reset = actionButton("reset", "↺", "Start this conversation over (the old one is archived)", () => resetSession(s));
    const del = actionButton("delete", "🗑", "Delete (archived, recoverable by an operator)", () => deleteSession(s));
    li.append(title, rename, reset, del);
    ul.appendChild(li);
  }
}

function actionButton(cls, label, tip, fn) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "act " + cls;
  b.textContent = label;
  b.title = tip;
  b.setAttribute("aria-label", tip);
  b.addEventListener("click", (ev) => { ev.stopPropagation(); fn(); });
  return b;
}

function startRename(li, s) {
  const input = document.createElement("input");
  input.className = "rename";
  input.value = s.title || "";
  input.maxLength = 200;
  li.textContent = "";
  li.appendChild(input);
  input.focus();
  input.select();
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const title = input.value.trim();
    input.remove(); // the list renders again below
    if (save && title && title !== s.title) {
      try {
        await api("PATCH", agentPath("/sessions/" + encodeURIComponent(s.sessionId)), { title });
        setStatus("");
        announceChange();
      } catch (err) { report(err); }
    }
    await loadSessions();
  };
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); finish(true); }
    if (ev.key === "Escape") { ev.preventDefault(); finish(false); }
  });
  input.addEventListener("blur", () => finish(true));
}

async function resetSession(s) {
  try {
    const data = await api("POST", agentPath("/sessions/" + encodeURIComponent(s.sessionId) + "/reset"));
    if (state.sessionId === s.sessionId) state.sessionId = data.session.sessionId;
    setStatus("Started over; the previous conversation is archived.");
    announceChange();
  } catch (err) { report(err); }
  await loadSessions();
  await loadHistory();
  writeHash();
}

async function deleteSession(s) {
  try {
    await api("DELETE", agentPath("/sessions/" + encodeURIComponent(s.sessionId)));
    if (state.sessionId === s.sessionId) {
      state.sessionId = "";
      await loadHistory();
    }
    setStatus("Session deleted (archived).");
    announceChange();
  } catch (err) { report(err); }
  writeHash();
  await loadSessions();
}

// sessionLoads counts loadSessions calls in flight: while any is, the
// sidebar is marked aria-busy (it is about to be drawn again).
let sessionLoads = 0;

// loadSessions draws the sidebar again; force follows a session that went
// away even while a message is being sent (send does, on a 404).
async function loadSessions(force) {
  const ul = $("sessions");
  sessionLoads++;
  ul.setAttribute("aria-busy", "true");
  try {
    const data = await api("GET", agentPath("/sessions"));
    state.sessions = data.sessions;
    const note = followCurrent(force);
    if (note && !state.busy) await loadHistory();
    if (note) setStatus(note);
  } catch (err) {
    report(err);
    state.sessions = [];
  } finally {
    if (--sessionLoads === 0) ul.setAttribute("aria-busy", "false");
  }
  renderSessions();
  renderInfo();
}

// followCurrent keeps the open session right when it changed outside this
// view (/delete, /new, a reset from another tab): a session id no longer
// listed is followed to its chat's current session, or to a new chat when
// the chat has none. It returns a note for the user when the open session
// changed, else "".
function followCurrent(force) {
  const cur = state.sessions.find((s) => s.sessionId === state.sessionId);
  if (cur) {
    state.sessionKey = cur.sessionKey;
    return "";
  }
  if (!state.sessionId || (state.busy && !force)) return "";
  const same = state.sessionKey && state.sessions.find((s) => s.sessionKey === state.sessionKey);
  state.sessionId = same ? same.sessionId : "";
  state.sessionKey = same ? same.sessionKey : "";
  writeHash();
  return same ? "This conversation was started over elsewhere; showing the new one."
    : "This session was deleted; the next message starts a new chat.";
}

// Other tabs of this page are told when one changes the sessions (a
// message, reset, rename, delete) through a localStorage key, and draw
// their list again; a tab coming back into view does too.
const CHANGED_KEY = "gateway.sessionsChanged";

function announceChange() {
  localStorage.setItem(CHANGED_KEY, String(Date.now()) + Math.random());
}

window.addEventListener("storage", (ev) => {
  if (ev.key === CHANGED_KEY && state.agent) loadSessions();
});
document.addEventListener("visibilitychange", () => {
  if (!document.hidden && state.agent && !state.busy) loadSessions();
});

async function switchTo(sessionId) {
  if (state.busy) return;
  state.sessionId = sessionId;
  const s = state.sessions.find((x) => x.sessionId === sessionId);
  state.sessionKey = s ? s.sessionKey : "";
  writeHash();
  renderSessions();
  await loadHistory();
}

$("new-chat").addEventListener("click", () => switchTo(""));

// ---- the sidebar as a drawer on narrow screens (style.css) -----------------

function setSidebar(open) {
  document.body.classList.toggle("sidebar-open", open);
  $("toggle-sidebar").setAttribute("aria-expanded", String(open));
  if (open) ($("sessions").querySelector("li.active .title") || $("new-chat")).focus();
}

$("toggle-sidebar").addEventListener("click", () => setSidebar(!document.body.classList.contains("sidebar-open")));
$("sidebar").addEventListener("keydown", (ev) => {
  if (ev.key === "Escape" && document.body.classList.contains("sidebar-open")) {
    setSidebar(false);
    $("toggle-sidebar").focus();
  }
});
// Choosing a session or a new chat closes the drawer.
$("sidebar").addEventListener("click", (ev) => {
  if (ev.target.closest("button.title, #new-chat, li.hit")) setSidebar(false);
});

// ---- search (GET /api/search) ---------------------------------------------

function hideSearch() {
  $("search-results").hidden = true;
  $("search-results").replaceChildren();
}

async function search(text) {
  const q = text.trim();
  if (!q) { hideSearch(); return; }
  const params = new URLSearchParams({ q, agent: state.agent, limit: "30" });
  let data;
  try {
    data = await api("GET", "/api/search?" + params.toString());
  } catch (err) {
    report(err);
    return;
  }
  setStatus("");
  const ul = $("search-results");
  ul.replaceChildren();
  if (!data.hits.length) {
    const li = document.createElement("li");
    li.className = "none";
    li.textContent = "No messages match.";
    ul.append(li);
  }
  for (const h of data.hits) {
    const li = document.createElement("li");
    li.className = "hit";
    const meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = new Date(h.at).toLocaleString() + " · " + h.role + " · " + h.sessionKey;
    const snip = document.createElement("span");
    snip.className = "snippet";
    snip.textContent = h.snippet;
    li.append(meta, snip);
    li.title = "Open this session";
    li.tabIndex = 0;
    li.setAttribute("role", "button");
    const open = () => { hideSearch(); $("search").value = ""; setSidebar(false); switchTo(h.sessionId); };
    li.addEventListener("click", open);
    li.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); open(); } });
    ul.append(li);
  }
  ul.hidden = false;
}

$("search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  search($("search").value);
});
$("search").addEventListener("keydown", (ev) => {
  if (ev.key === "Escape") { $("search").value = ""; hideSearch(); }
});
$("search").addEventListener("search", () => { if (!$("search").value) hideSearch(); });

// ---- chat with a streamed reply -------------------------------------------

// readEvents parses a text/event-stream body and calls onEvent(name, data,
// id) for each event (id: the event's id field, "" without one).
async function readEvents(body, onEvent) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let name = "message";
      let id = "";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const c = line.indexOf(":");
        const field = c < 0 ? line : line.slice(0, c);
        let val = c < 0 ? "" : line.slice(c + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "event") name = val;
        if (field === "data") data.push(val);
        if (field === "id") id = val;
      }
      if (data.length) {
        let parsed = null;
        try { parsed = JSON.parse(data.join("\n")); } catch (e) { parsed = { text: data.join("\n") }; }
        onEvent(name, parsed, id);
      }
    }
  }
}

// A reply is never lost to a dropped connection: every event of a chat
// stream has an id, and when the stream ends before its done event (the
// network, a proxy, a daemon restart) the page asks for the rest of the
// turn (GET .../chat/turns/<turn> with Last-Event-ID, as EventSource
// would), retrying with backoff. The server sends exactly the events after
// that id, or, when the stream is gone (a restart), the reply whole in a
// reply event that replaces the bubble's text: each reply shows once.
const RESUME_FIRST_WAIT_MS = 250;
const RESUME_MAX_WAIT_MS = 5000;
const RESUME_ATTEMPTS = 60;

class GiveUp extends Error {}

// A turn view t shows a reply as it streams: text segments and tool call
// chips in the order they came (text, a tool call, more text), as the
// transcript has them after a reload. t.bubble is the segment text goes to
// (null after a tool call: the next delta starts one), t.text its text,
// t.replies every segment of the turn.
function newTurnView() {
  const t = { bubble: null, text: "", replies: [], turn: "", lastId: "", done: false };
  segment(t);
  return t;
}

function segment(t) {
  if (!t.bubble) {
    t.bubble = addBubble("assistant", "");
    t.bubble.classList.add("streaming");
    t.text = "";
    t.replies.push(t.bubble);
  }
  return t.bubble;
}

// closeSegment ends the current text segment (an empty one goes away).
function closeSegment(t) {
  const b = t.bubble;
  if (!b) return;
  b.classList.remove("streaming");
  if (!t.text) {
    b.remove();
    t.replies = t.replies.filter((x) => x !== b);
  }
  t.bubble = null;
  t.text = "";
}

function showText(t, text) {
  const b = segment(t);
  t.text = text;
  Markdown.render(b, text);
  b.scrollIntoView({ block: "end" });
}

// applyEvent shows one event of turn view t.
function applyEvent(t, name, data, id) {
  if (id) t.lastId = id;
  if (name === "turn" && data.turnId) t.turn = data.turnId;
  if (name === "delta") showText(t, (t.bubble ? t.text : "") + (data.text || ""));
  if (name === "reply") {
    // The reply whole after a restart: it replaces what streamed.
    for (const b of t.replies) b.remove();
    t.replies = [];
    t.bubble = null;
    showText(t, data.text || "");
  }
  if (name === "tool") { closeSegment(t); addTool(data.name, data.arguments); }
  if (name === "choices") { closeSegment(t); addChoices(data); }
  if (name === "media") { closeSegment(t); addMedia(data.files); }
  if (name === "error") { closeSegment(t); addBubble("error", data.message || "the reply failed"); }
  if (name === "done") {
    t.done = true;
    if (data.sessionId) {
      state.sessionId = data.sessionId;
    } else if (state.sessionId) {
      // The turn left its chat without a session (/delete): what it said
      // stays in view, and the next message starts a new chat.
      state.sessionId = "";
      state.sessionKey = "";
      t.note = "The session was deleted; the next message starts a new chat.";
    }
  }
}

// resumeTurn reconnects to turn view t until its done event arrives.
async function resumeTurn(t) {
  let wait = RESUME_FIRST_WAIT_MS;
  for (let attempt = 1; !t.done; attempt++) {
    if (!t.turn || attempt > RESUME_ATTEMPTS) {
      throw new GiveUp("the connection was lost; the reply will be in this session's history");
    }
    setStatus("Connection lost; reconnecting…");
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, RESUME_MAX_WAIT_MS);
    const h = headers({ "Accept": "text/event-stream" });
    if (t.lastId) h["Last-Event-ID"] = t.lastId;
    let res;
    try {
      res = await fetch(agentPath("/chat/turns/" + encodeURIComponent(t.turn)), { headers: h });
    } catch (e) { continue; } // the daemon is not back yet
    if (res.status === 204) { t.done = true; break; }
    if (res.status === 401) { askToken(); throw new AuthError("token"); }
    if (res.status >= 400 && res.status < 500) {
      let msg = res.status + " " + res.statusText;
      try { msg = (await res.json()).error || msg; } catch (e) { /* keep status */ }
      throw new GiveUp(msg);
    }
    if (!res.ok) continue; // 502/503 while the daemon restarts
    try {
      await readEvents(res.body, (name, data, id) => applyEvent(t, name, data, id));
    } catch (e) { /* dropped again: go on */ }
  }
  setStatus("");
}

// newRequestId is a random UUID (crypto.randomUUID needs a secure
// context; getRandomValues does not).
function newRequestId() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return h.slice(0, 8) + "-" + h.slice(8, 12) + "-" + h.slice(12, 16) + "-" + h.slice(16, 20) + "-" + h.slice(20);
}

// postChat posts a chat message, sending it again (same request id) while
// no answer comes or the daemon answers 502 or 504, or 503 with
// Retry-After (starting or shutting down for a restart: the message was
// not taken), or another 503 a few times.
async function postChat(body) {
  let wait = RESUME_FIRST_WAIT_MS;
  for (let attempt = 1; ; attempt++) {
    let res = null;
    try {
      res = await fetch(agentPath("/chat"), {
        method: "POST",
        headers: headers({ "Content-Type": "application/json", "Accept": "text/event-stream" }),
        body: JSON.stringify(body),
      });
    } catch (e) {
      if (attempt >= RESUME_ATTEMPTS) throw e;
    }
    // 503 is also a refusal worth showing (storage full): a few tries only,
    // unless it says when to come back.
    const retry = res && (res.status === 502 || res.status === 504 ||
      (res.status === 503 && (attempt < 5 || res.headers.has("Retry-After"))));
    if (res && (!retry || attempt >= RESUME_ATTEMPTS)) {
      if (attempt > 1) setStatus("");
      return res;
    }
    setStatus("Connection lost; sending again…");
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, RESUME_MAX_WAIT_MS);
  }
}

async function send(text, choice) {
  state.busy = true;
  renderInfo();
  setStatus("");
  addBubble("user", text);
  let t = newTurnView();
  // The request id makes the post safe to send again when its answer never
  // came (the same message, answered with its turn's stream); a button
  // press is made safe by its question's id, and goes to the session that
  // asked.
  const body = choice ? { message: "", choice } : { message: text, requestId: newRequestId() };
  try {
    let res;
    for (let attempt = 1; ; attempt++) {
      if (choice) { body.sessionId = state.sessionId; res = await postChat(body); break; }
      if (state.sessionId) body.sessionId = state.sessionId; else delete body.sessionId;
      res = await postChat(body);
      // 404: the session went away (deleted or reset in another tab):
      // the list tells what the chat is now, and the message goes there
      // (it was not taken, so sending it again is safe).
      if (res.status !== 404 || !body.sessionId || attempt > 1) break;
      const gone = body.sessionId;
      await loadSessions(true);
      if (state.sessionId === gone) break;
      await loadHistory();
      addBubble("user", text);
      t = newTurnView();
    }
    if (res.status === 401) { askToken(); throw new AuthError("token"); }
    if (!res.ok) {
      let msg = res.status + " " + res.statusText;
      try { msg = (await res.json()).error || msg; } catch (e) { /* keep status */ }
      throw new Error(msg);
    }
    t.turn = res.headers.get("X-Turn-Id") || "";
    try {
      await readEvents(res.body, (name, data, id) => applyEvent(t, name, data, id));
    } catch (e) { /* dropped: resumed below */ }
    if (!t.done) await resumeTurn(t);
  } catch (err) {
    report(err);
  } finally {
    closeSegment(t);
    state.busy = false;
    writeHash();
    announceChange();
    await loadSessions();
    if (t.note) setStatus(t.note);
  }
}

$("composer").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const input = $("input");
  const text = input.value.trim();
  if (!text || state.busy) return;
  input.value = "";
  send(text);
});

$("input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    $("composer").requestSubmit();
  }
});

// ---- agents and start ------------------------------------------------------

$("agent").addEventListener("change", async () => {
  state.agent = $("agent").value;
  state.sessionId = "";
  writeHash();
  await loadSessions();
  await loadHistory();
});

async function start() {
  let agents;
  try {
    agents = (await api("GET", "/api/agents")).agents;
  } catch (err) { report(err); return; }
  const want = readHash();
  const sel = $("agent");
  sel.textContent = "";
  for (const a of agents) {
    const o = document.createElement("option");
    o.value = a;
    o.textContent = a;
    sel.appendChild(o);
  }
  $("agent-picker").hidden = agents.length < 2;
  state.agent = agents.includes(want.agent) ? want.agent : agents[0];
  sel.value = state.agent;
  state.sessionId = state.agent === want.agent ? want.sessionId : "";
  await loadSessions();
  await loadHistory();
  writeHash();
  document.body.dataset.ready = "true";
}

start();
