// What every gateway page shares: the API token dialog and api(), which
// sends the token with each request. Plain JS, loaded before the page's own
// script; it defines $, AuthError, headers, api, askToken and onToken.
"use strict";

const TOKEN_KEY = "gateway.token";
const $ = (id) => document.getElementById(id);

class AuthError extends Error {}

function headers(extra) {
  const h = Object.assign({}, extra || {});
  const tok = localStorage.getItem(TOKEN_KEY);
  if (tok) h["Authorization"] = "Bearer " + tok;
  return h;
}

// api calls the gateway's JSON API; a 401 opens the token dialog, another
// error status throws an Error with .status and .data (the body).
async function api(method, path, body) {
  const opts = { method, headers: headers(body !== undefined ? { "Content-Type": "application/json" } : {}) };
  if (body !== undefined) opts.body = JSON.stringify(body);
  const res = await fetch(path, opts);
  if (res.status === 401) {
    askToken();
    throw new AuthError("the API token is missing or wrong");
  }
  let data = null;
  try { data = await res.json(); } catch (e) { /* no JSON body */ }
  if (!res.ok) {
    const err = new Error((data && data.error) || res.status + " " + res.statusText);
    err.status = res.status;
    err.data = data; // GET /api/status answers 503 with its report
    throw err;
  }
  return data;
}

// ---- the token dialog (#auth): modal, Escape or Cancel closes it, focus
// returns to where it was.

let tokenSaved = () => {};
let focusBefore = null;

// onToken sets what runs after the token is saved (the page starts again).
function onToken(fn) { tokenSaved = fn; }

function askToken() {
  if (!$("auth").hidden) return;
  focusBefore = document.activeElement;
  $("token").value = localStorage.getItem(TOKEN_KEY) || "";
  $("auth").hidden = false;
  $("token").focus();
}

function closeToken() {
  $("auth").hidden = true;
  if (focusBefore && focusBefore.focus) focusBefore.focus();
}

$("auth-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const v = $("token").value.trim();
  if (v) localStorage.setItem(TOKEN_KEY, v); else localStorage.removeItem(TOKEN_KEY);
  closeToken();
  tokenSaved();
});
$("token-cancel").addEventListener("click", closeToken);
$("auth").addEventListener("keydown", (ev) => {
  if (ev.key === "Escape") { ev.preventDefault(); closeToken(); }
  if (ev.key === "Tab") {
    // Keep focus inside the dialog.
    const f = [...$("auth").querySelectorAll("input, button")];
    const i = f.indexOf(document.activeElement);
    if (ev.shiftKey && i <= 0) { ev.preventDefault(); f[f.length - 1].focus(); }
    if (!ev.shiftKey && i === f.length - 1) { ev.preventDefault(); f[0].focus(); }
  }
});
$("change-token").addEventListener("click", askToken);
