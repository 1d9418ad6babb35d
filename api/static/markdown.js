// Markdown for the gateway pages: a reply's text is parsed by marked
// (vendor/marked.min.js, GitHub-flavoured: tables, fences, line breaks) and
// the HTML it makes is cleaned by DOMPurify (vendor/purify.min.js) before it
// touches the page, so a <script>, an on* attribute or a javascript: link
// in a reply is inert. Both are vendored into the binary: the page works
// offline and loads nothing from elsewhere (the CSP says script-src 'self').
// Code blocks get a Copy button; links open in a new tab without a referrer.
"use strict";

const Markdown = (() => {
  const PURIFY = {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
    FORBID_ATTR: ["style"],
    RETURN_DOM_FRAGMENT: true,
  };

  // Links leave the page safely (the hook runs for every element kept).
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A" && node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  });

  function copyButton(pre) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "copy";
    b.textContent = "Copy";
    b.title = "Copy this code";
    b.addEventListener("click", async () => {
      const code = pre.querySelector("code") || pre;
      try {
        await navigator.clipboard.writeText(code.textContent);
        b.textContent = "Copied";
      } catch (e) {
        // No clipboard (an insecure context): select the code instead.
        const r = document.createRange();
        r.selectNodeContents(code);
        const sel = getSelection();
        sel.removeAllRanges();
        sel.addRange(r);
        b.textContent = "Selected";
      }
      setTimeout(() => { b.textContent = "Copy"; }, 1500);
    });
    return b;
  }

  // render replaces el's children with text rendered as sanitised HTML.
  function render(el, text) {
    const html = marked.parse(text || "", { gfm: true, breaks: true, async: false });
    const frag = DOMPurify.sanitize(html, PURIFY);
    for (const pre of frag.querySelectorAll("pre")) {
      const wrap = document.createElement("div");
      wrap.className = "code";
      pre.replaceWith(wrap);
      wrap.append(copyButton(pre), pre);
    }
    for (const t of frag.querySelectorAll("table")) {
      const wrap = document.createElement("div");
      wrap.className = "table"; // scrolls sideways instead of widening the page
      t.replaceWith(wrap);
      wrap.append(t);
    }
    // marked ends blocks with a newline: no stray text at the edges.
    for (const end of ["firstChild", "lastChild"]) {
      while (frag[end] && frag[end].nodeType === Node.TEXT_NODE && !frag[end].textContent.trim()) frag[end].remove();
    }
    el.replaceChildren(frag);
    el.classList.add("md");
  }

  return { render };
})();
