// Package webtest starts a whole gateway daemon in-process for tests,
// built by gatewayd from a config as `gateway run` builds it: the api
// handler, the web channel adapter, the dispatcher with its lanes, a
// sessions manager on a temporary state directory and the offline echo
// provider.
//
// Start is used by the api package's handler tests and by this package's
// browser test, which drives Debian's headless chromium through chromedp
// against the embedded web page. Everything started by Start stops in the
// test's Cleanup.
package webtest
