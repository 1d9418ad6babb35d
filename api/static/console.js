// The gateway console: what the daemon is doing (GET /api/status: channel
// accounts, providers, MCP servers, lanes, delivery, storage, replicas),
// refreshed every few seconds while the page is in view, and the dead
// letters (GET /api/deliveries/failed) with resubmit and discard. Plain
// JS; everything shown is set with textContent, never as HTML.
"use strict";

// ?refresh=N sets the refresh period in seconds (at least 1; default 5).
const REFRESH_S = Math.max(1, Number(new URLSearchParams(location.search).get("refresh")) || 5);

onToken(() => {
  start();
  if (typeof loadAllSessions === "function") loadAllSessions().catch(report); // console_sessions.js
});

function setStatus(text) { $("c-status").textContent = text || ""; }

function report(err) {
  if (err instanceof AuthError) { setStatus("Enter the API token to continue."); return; }
  setStatus(String(err && err.message ? err.message : err));
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

const when = (t) => (t && !String(t).startsWith("0001-") ? new Date(t).toLocaleString() : "–");

function items(ul, rows) {
  $(ul).replaceChildren(...rows.map(([label, value, cls]) => {
    const li = el("li");
    li.append(el("span", label + ": "), el("span", value, cls || ""));
    return li;
  }));
}

// ---- status ----------------------------------------------------------------

function drawStatus(st) {
  const badge = $("c-overall");
  badge.textContent = st.overall;
  badge.className = "badge " + st.overall;
  $("c-checked").textContent = when(st.checkedAt);
  $("c-problems").replaceChildren(...(st.problems || []).map((p) => el("li", p)));

  $("c-channels").tBodies[0].replaceChildren(...(st.channels || []).map((c) => {
    const tr = el("tr");
    tr.dataset.account = c.channel + ":" + c.account;
    tr.dataset.state = c.state;
    const traffic = when(c.lastInbound) + " / " + when(c.lastOutbound);
    tr.append(el("td", c.channel), el("td", c.account), el("td", c.state + (c.leader ? " (" + c.leader + ")" : ""), "state " + c.state),
      el("td", c.mode || ""), el("td", when(c.since)), el("td", c.failures || 0),
      el("td", c.lastError ? c.lastError + " (" + when(c.lastErrorAt) + ")" : "", "err"), el("td", traffic));
    return tr;
  }));
  if (!(st.channels || []).length) {
    const tr = el("tr");
    tr.append(Object.assign(el("td", "No channel accounts configured (the web chat needs none)."), { colSpan: 8 }));
    $("c-channels").tBodies[0].append(tr);
  }
  items("c-providers", (st.providers || []).map((p) => [p.name, p.breaker.state + (p.breaker.lastError ? " — " + p.breaker.lastError : ""), p.breaker.state]));
  items("c-mcp", (st.mcp || []).length ? st.mcp.map((m) => [m.name, m.state + (m.error ? " — " + m.error : "") + " · " + (m.tools || []).length + " tools", m.state]) : [["servers", "none configured"]]);
  const l = st.lanes || {};
  const running = Object.entries(l.running || {}).map(([k, v]) => k + " " + v + "/" + ((l.caps || {})[k] ?? "∞")).join(", ");
  items("c-lanes", [["running", running || "nothing"], ["queued", l.queued || 0], ["waiting sessions", l.waiting || 0], ["busy sessions", l.busySessions || 0]]);
  const d = st.delivery || {};
  items("c-delivery", [["pending messages", d.pending || 0], ["replies being sent", d.replies || 0],
    ["given up", d.givenUpTotal || 0, d.givenUpTotal ? "failing" : ""], ["dead letters", d.deadLetters < 0 ? "unreadable" : d.deadLetters || 0],
    ["journal write failures", d.writeFailures || 0, d.writeFailures ? "failing" : ""]]);
  const s = st.storage || {};
  items("c-storage", [["backend", (s.kind || "?") + (s.location ? " · " + s.location : "")],
    ["health", s.healthy ? "healthy" : "unhealthy" + (s.error || s.journalError ? " — " + (s.error || s.journalError) : ""), s.healthy ? "healthy" : "unhealthy"]]);
  $("c-replicas-card").hidden = !st.replicas;
  if (st.replicas) {
    const r = st.replicas;
    items("c-replicas", [["this replica", r.replicaId], ...(r.replicas || []).map((x) => [x.id, x.host || ""]),
      ...(r.leaders || []).map((x) => ["leader of " + x.role, x.holder]),
      ...(r.error ? [["error", r.error, "failing"]] : [])]);
  }
}

async function loadStatus() {
  let st;
  try {
    st = await api("GET", "/api/status");
  } catch (err) {
    // 503 carries the report too: something is failing.
    if (err.status === 503 && err.data && err.data.overall) st = err.data;
    else { report(err); return false; }
  }
  drawStatus(st);
  return true;
}

// ---- dead letters ------------------------------------------------------------

function letterText(l) {
  if (l.reply && l.reply.chunks) return l.reply.chunks.join("");
  if (l.record && l.record.payload && typeof l.record.payload.text === "string") return l.record.payload.text;
  return "";
}

async function act(l, how) {
  try {
    if (how === "resubmit") await api("POST", "/api/deliveries/failed/" + encodeURIComponent(l.id) + "/resubmit");
    else await api("DELETE", "/api/deliveries/failed/" + encodeURIComponent(l.id));
    setStatus(how === "resubmit" ? "Resubmitted " + l.id + "." : "Discarded " + l.id + ".");
  } catch (err) { report(err); }
  await Promise.all([loadLetters(), loadStatus()]);
}

async function loadLetters() {
  let data;
  try {
    data = await api("GET", "/api/deliveries/failed");
  } catch (err) {
    if (err.status === 404) { $("c-dead").tBodies[0].replaceChildren(); return true; }
    report(err);
    return false;
  }
  const body = $("c-dead").tBodies[0];
  body.replaceChildren(...data.letters.map((l) => {
    const tr = el("tr");
    tr.dataset.id = l.id;
    tr.dataset.state = l.state;
    const btns = el("td");
    if (l.state === "failed") {
      const re = el("button", "Resubmit");
      re.type = "button";
      re.className = "resubmit";
      re.setAttribute("aria-label", "Resubmit " + l.id);
      re.addEventListener("click", () => { re.disabled = true; act(l, "resubmit"); });
      const rm = el("button", "Discard");
      rm.type = "button";
      rm.className = "discard";
      rm.setAttribute("aria-label", "Discard " + l.id);
      rm.addEventListener("click", () => { if (confirm("Discard this dead letter? It cannot be resubmitted afterwards.")) { rm.disabled = true; act(l, "discard"); } });
      btns.append(re, rm);
    } else {
      btns.textContent = l.state;
    }
    tr.append(el("td", when(l.at)), el("td", l.kind), el("td", l.sessionKey || ""), el("td", l.reason, "err"),
      el("td", letterText(l).slice(0, 300), "text"), btns);
    return tr;
  }));
  if (!data.letters.length) {
    const tr = el("tr");
    tr.append(Object.assign(el("td", "None: nothing was given up."), { colSpan: 6 }));
    body.append(tr);
  }
  return true;
}

// ---- refresh -------------------------------------------------------------------

let timer = 0;

async function refresh() {
  clearTimeout(timer);
  const parts = [loadStatus(), loadLetters()];
  if (typeof loadPairing === "function") parts.push(loadPairing()); // console_pairing.js
  const ok = (await Promise.all(parts)).every(Boolean);
  if (ok && $("c-status").textContent.startsWith("Enter the API token")) setStatus("");
  document.body.dataset.ready = "true";
  // The page owns one timer: the next refresh is set when this one ends,
  // and none while the page is hidden.
  if (!document.hidden) timer = setTimeout(refresh, REFRESH_S * 1000);
}

document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); else clearTimeout(timer); });

function start() {
  $("c-every").textContent = REFRESH_S + " s";
  refresh();
}

start();
