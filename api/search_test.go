package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/internal/webtest"
)

func (c *client) searchHits(query string) (int, api.SearchResponse, string) {
	c.t.Helper()
	res := c.raw("GET", "/api/search?"+query, nil)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	var out api.SearchResponse
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, &out); err != nil {
			c.t.Fatalf("search answer: %v: %s", err, data)
		}
	}
	return res.StatusCode, out, string(data)
}

func TestSearchAPI(t *testing.T) {
	env := webtest.Start(t, webtest.Config{Token: "s3cret", Agents: []string{"main", "ops"}})
	c := newClient(t, env, "s3cret")
	c.chat("main", "where did we park the zeppelin", "")
	c.chat("ops", "zeppelin maintenance window", "")
	c.chat("main", "unrelated chatter", "")

	if code, _, _ := newClient(t, env, "").searchHits("q=zeppelin"); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	code, res, body := c.searchHits("q=ZEPPELIN")
	// Each message and its echo: two agents, four hits.
	if code != http.StatusOK || len(res.Hits) != 4 {
		t.Fatalf("search: %d %s", code, body)
	}
	for _, h := range res.Hits {
		if !strings.Contains(strings.ToLower(h.Snippet), "zeppelin") || h.SessionKey == "" || h.EntryID == "" || h.At.IsZero() {
			t.Errorf("hit %+v", h)
		}
	}
	if res.Hits[0].Agent != "ops" || res.Hits[0].Role != "assistant" {
		t.Errorf("newest hit %+v, want ops' echo", res.Hits[0])
	}
	_, res, _ = c.searchHits("q=zeppelin&agent=main")
	if len(res.Hits) != 2 || res.Hits[0].Agent != "main" || res.Hits[1].Agent != "main" {
		t.Errorf("agent=main: %+v", res.Hits)
	}
	_, res, _ = c.searchHits("q=zeppelin&limit=1&room=" + url.QueryEscape(res.Hits[0].SessionKey))
	if len(res.Hits) != 1 || res.Hits[0].Agent != "main" {
		t.Errorf("room and limit: %+v", res.Hits)
	}
	_, res, _ = c.searchHits("q=zeppelin&since=2000-01-01")
	if len(res.Hits) != 4 {
		t.Errorf("since 2000: %d hits", len(res.Hits))
	}
	_, res, _ = c.searchHits("q=zeppelin&since=2999-01-01")
	if len(res.Hits) != 0 {
		t.Errorf("since 2999: %+v", res.Hits)
	}
	for _, tc := range []struct {
		query string
		code  int
		msg   string
	}{
		{"q=", http.StatusBadRequest, "empty query"},
		{"q=zeppelin&limit=x", http.StatusBadRequest, "limit"},
		{"q=zeppelin&limit=5000", http.StatusBadRequest, "limit"},
		{"q=zeppelin&since=yesterday", http.StatusBadRequest, "since"},
		{"q=zeppelin&room=a:b/c", http.StatusBadRequest, "room"},
		{"q=zeppelin&agent=nobody", http.StatusNotFound, "agent nobody not found"},
		// A misspelt filter searched every agent, room or date.
		{"q=zeppelin&agnet=ops", http.StatusBadRequest, `unknown parameter \"agnet\"; use q, agent, room, since, limit`},
		{"query=zeppelin", http.StatusBadRequest, `unknown parameter \"query\"`},
	} {
		code, _, body := c.searchHits(tc.query)
		if code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %s, want %d mentioning %q", tc.query, code, body, tc.code, tc.msg)
		}
	}
	if code, _ := c.do("POST", "/api/search", map[string]string{}); code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", code)
	}
}
