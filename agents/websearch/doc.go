// Package websearch serves the web_search agent tool: a query sent to one
// configured search provider, its results returned as title, URL and
// snippet so the model can cite them.
//
// A Provider is one search API. Two are built in: SearXNG's JSON API
// (GET <baseURL>/search?q=…&format=json, an instance the operator runs;
// the instance must have "json" among its search.formats) and the Brave
// Search API (GET https://api.search.brave.com/res/v1/web/search with the
// X-Subscription-Token header). The provider's address comes from the
// configuration only, never from a chat or the model, so unlike web_fetch
// it may be a local address (a SearXNG on the same host).
//
// A Searcher wraps the provider with the limits every search obeys: a
// per-query result cap, a response size cap, a timeout and a daemon-wide
// rate (token bucket, queries per minute) that protects a hosted API's
// quota; the runner adds a per-turn cap. Searches are off unless
// webSearch.provider is set and an agent's tools.allow names web_search.
//
// A Searcher is safe for concurrent use; Search blocks for at most the
// configured timeout and holds no state between calls but the rate bucket.
package websearch
