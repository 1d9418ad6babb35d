// Package webfetch fetches public web pages for the web_fetch agent tool:
// an HTTP GET with caps on bytes read and time, readable text extraction for
// HTML (codeberg.org/readeck/go-readability, a maintained fork of
// go-shiori/go-readability), plain text passed through and other content
// types described by type and size.
//
// Server-side request forgery defence: the Fetcher dials only addresses
// that pass Refusal — no loopback, private (RFC 1918, fc00::/7), link-local
// (169.254/16 with cloud metadata, fe80::/10), unspecified, multicast,
// CGNAT (100.64/10) or other non-public ranges. The check runs in the
// Fetcher's own DialContext on the resolved address actually dialled, so it
// covers DNS names, IP literals and every redirect (at most MaxRedirects).
// Environment proxies are ignored: a proxy would dial on our behalf.
//
// A Fetcher is safe for concurrent use; Fetch blocks for at most the
// configured timeout and holds no state between calls.
package webfetch
