// The console's pairing requests (GET /api/pairing): approve a pending code
// (the sender is told in their chat) or revoke an approved sender. Loaded
// after console.js; refreshed with the status.
"use strict";

function pairButton(label, cls, aria, fn) {
  const b = el("button", label, cls);
  b.type = "button";
  b.setAttribute("aria-label", aria);
  b.addEventListener("click", () => { b.disabled = true; fn(); });
  return b;
}

async function pairAct(path, body, done) {
  try {
    const res = await api("POST", path, body);
    setStatus(done(res));
  } catch (err) { report(err); }
  await loadPairing();
}

async function loadPairing() {
  let data;
  try {
    data = await api("GET", "/api/pairing");
  } catch (err) {
    if (err.status === 404) return true; // no pairing routes
    report(err);
    return false;
  }
  const none = (n, text) => { const tr = el("tr"); tr.append(Object.assign(el("td", text), { colSpan: n })); return tr; };
  $("c-pending").tBodies[0].replaceChildren(...data.pending.map((r) => {
    const tr = el("tr");
    tr.dataset.code = r.code;
    const td = el("td");
    td.append(pairButton("Approve", "approve", "Approve " + r.code, () => pairAct(
      "/api/pairing/" + encodeURIComponent(r.channel) + "/approve", { code: r.code },
      (res) => "Approved " + r.channel + " sender " + r.senderId + (res.notified ? "; they were told in their chat." : "; they could not be told: " + res.notifyError))));
    tr.append(el("td", r.code), el("td", r.channel), el("td", r.accountId), el("td", r.senderId), el("td", r.senderName || ""), el("td", when(r.expiresAt)), td);
    return tr;
  }), ...(data.pending.length ? [] : [none(7, "No pending requests.")]));
  $("c-approved").tBodies[0].replaceChildren(...data.approved.map((a) => {
    const tr = el("tr");
    tr.dataset.sender = a.channel + ":" + a.accountId + ":" + a.senderId;
    const td = el("td");
    td.append(pairButton("Revoke", "revoke", "Revoke " + a.senderId, () => {
      if (!confirm("Revoke " + a.channel + " sender " + a.senderId + "? They will need a new code.")) { loadPairing(); return; }
      pairAct("/api/pairing/" + encodeURIComponent(a.channel) + "/revoke", { accountId: a.accountId, senderId: a.senderId },
        () => "Revoked " + a.channel + " sender " + a.senderId + ".");
    }));
    tr.append(el("td", when(a.approvedAt)), el("td", a.channel), el("td", a.accountId), el("td", a.senderId), el("td", a.senderName || ""), td);
    return tr;
  }), ...(data.approved.length ? [] : [none(6, "Nobody approved by code.")]));
  return true;
}
loadPairing();
