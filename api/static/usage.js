// The gateway usage page: GET /api/usage as a per-day bar chart (inline
// SVG) and a table grouped by sender, session, room, model, day or agent.
// Plain JS, no build step, nothing fetched from elsewhere. Everything shown
// is set with textContent or SVG attributes, never as HTML.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
onToken(() => start());

function setStatus(text) { $("u-status").textContent = text || ""; }

const fmtInt = (n) => Number(n || 0).toLocaleString("en-US");
const fmtUSD = (v) => (v < 1 ? v.toFixed(4) : v.toFixed(2));
const tokens = (b) => b.input + b.output + b.cacheRead + b.cacheWrite;

function query(by) {
  const p = new URLSearchParams({ by });
  const agent = $("u-agent").value;
  const since = $("u-since").value.trim();
  if (agent) p.set("agent", agent);
  if (since) p.set("since", since);
  return "/api/usage?" + p.toString();
}

// days fills the UTC days between the first and last bucket with zeros.
function days(buckets) {
  if (buckets.length === 0) return [];
  const byDay = new Map(buckets.map((b) => [b.key, b]));
  const out = [];
  const end = new Date(buckets[buckets.length - 1].key + "T00:00:00Z");
  for (let d = new Date(buckets[0].key + "T00:00:00Z"); d <= end && out.length < 1000; d.setUTCDate(d.getUTCDate() + 1)) {
    const key = d.toISOString().slice(0, 10);
    out.push(byDay.get(key) || { key, turns: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 });
  }
  return out;
}

function svgEl(name, attrs) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

// drawChart draws one bar per day, scaled to the most expensive day, or to
// the most tokens when nothing is priced; the title says which it plots.
// A bar is at most MAX_BAR wide (one day is not a full-width block).
const MAX_BAR = 48;

function drawChart(report) {
  const svg = $("u-chart");
  svg.replaceChildren();
  const ds = days(report.buckets);
  const priced = ds.some((d) => d.cost > 0);
  $("u-chart-title").textContent = priced ? "Cost per day (USD, UTC)" : "Tokens per day (UTC; no prices configured)";
  const range = $("u-chart-range");
  range.replaceChildren();
  if (ds.length === 0) {
    const t = svgEl("text", { x: 360, y: 95, "text-anchor": "middle" });
    t.textContent = "no turns in this range";
    svg.append(t);
    return;
  }
  const value = priced ? (d) => d.cost : tokens;
  const top = Math.max(...ds.map(value)) || 1;
  const W = 720, H = 180, pad = 16, gap = ds.length > 60 ? 1 : 3;
  const w = Math.min((W - 2 * pad) / ds.length, MAX_BAR + gap);
  const left = (W - w * ds.length) / 2;
  ds.forEach((d, i) => {
    const h = (value(d) / top) * (H - 2 * pad - 8);
    const bar = svgEl("rect", { class: "bar", x: left + i * w + gap / 2, y: H - pad - h, width: Math.max(w - gap, 1), height: Math.max(h, 0), "data-day": d.key });
    const title = svgEl("title", {});
    title.textContent = d.key + ": $" + fmtUSD(d.cost) + ", " + fmtInt(tokens(d)) + " tokens, " + d.turns + " turns";
    bar.append(title);
    svg.append(bar);
  });
  const max = svgEl("text", { x: pad, y: 12 });
  max.textContent = priced ? "max $" + fmtUSD(top) + " a day" : "max " + fmtInt(top) + " tokens a day (no prices configured)";
  svg.append(max);
  for (const text of [ds[0].key, ds[ds.length - 1].key]) {
    const s = document.createElement("span");
    s.textContent = text;
    range.append(s);
  }
}

function row(cells, tag) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = document.createElement(tag || "td");
    td.textContent = c;
    tr.append(td);
  }
  return tr;
}

// nameOf is what the Name column shows: the report's label (a sender's
// latest name), else for a day its weekday.
const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
function nameOf(by, b) {
  if (b.label) return b.label;
  if (by === "day" && /^\d{4}-\d{2}-\d{2}$/.test(b.key)) return WEEKDAYS[new Date(b.key + "T00:00:00Z").getUTCDay()];
  return "";
}

function drawTable(report) {
  $("u-key").textContent = report.by.charAt(0).toUpperCase() + report.by.slice(1);
  $("u-name").textContent = report.by === "day" ? "Weekday" : "Name";
  const body = $("u-table").tBodies[0];
  body.replaceChildren(...report.buckets.map((b) =>
    row([b.key || "–", nameOf(report.by, b), fmtInt(b.turns), fmtInt(b.input), fmtInt(b.output), fmtInt(b.cacheRead), fmtInt(b.cacheWrite), fmtUSD(b.cost)])));
  const t = report.total;
  $("u-table").tFoot.replaceChildren(row(["Total", "", fmtInt(t.turns), fmtInt(t.input), fmtInt(t.output), fmtInt(t.cacheRead), fmtInt(t.cacheWrite), fmtUSD(t.cost)]));
}

async function show() {
  document.body.dataset.ready = "false";
  setStatus("");
  try {
    const [perDay, grouped] = await Promise.all([api("GET", query("day")), api("GET", query($("u-by").value))]);
    drawChart(perDay);
    drawTable(grouped);
  } catch (err) {
    if (err instanceof AuthError) { setStatus("Enter the API token to continue."); return; }
    setStatus(String(err && err.message ? err.message : err));
  }
  document.body.dataset.ready = "true";
}

$("filters").addEventListener("submit", (ev) => {
  ev.preventDefault();
  show();
});

async function start() {
  try {
    const agents = (await api("GET", "/api/agents")).agents;
    const sel = $("u-agent");
    sel.replaceChildren(sel.options[0]);
    for (const a of agents) {
      const o = document.createElement("option");
      o.value = a;
      o.textContent = a;
      sel.append(o);
    }
  } catch (err) {
    if (err instanceof AuthError) { setStatus("Enter the API token to continue."); return; }
    setStatus(String(err && err.message ? err.message : err));
    return;
  }
  await show();
}

start();
