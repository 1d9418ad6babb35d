package agents

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// searchResult is the decoded sessions_search tool result.
type searchResult struct {
	Hits []searchHit `json:"hits"`
	Err  string      `json:"error"`
}

// searchTurn runs a turn in key whose model calls sessions_search with args
// and returns what the tool answered and whether it was offered.
func searchTurn(t *testing.T, k *disk, agent string, key routing.Key, args map[string]any) (searchResult, bool) {
	t.Helper()
	offered := false
	var got searchResult
	calls := 0
	k.p.reply = func(_ int, req llm.Request) (sessions.Message, error) {
		calls++
		if calls == 1 {
			for _, tl := range req.Tools {
				offered = offered || tl.Name == "sessions_search"
			}
			return assistantCall("s1", "sessions_search", args), nil
		}
		last := req.Messages[len(req.Messages)-1]
		if err := json.Unmarshal([]byte(last.Text()), &got); err != nil {
			t.Fatalf("tool result %q: %v", last.Text(), err)
		}
		return assistantText("done"), nil
	}
	k.begin(agent, key)
	if _, err := k.r.Run(context.Background(), Turn{AgentID: agent, Key: key,
		Inputs: []sessions.Message{sessions.UserText("search please", time.Now())}}); err != nil {
		t.Fatal(err)
	}
	return got, offered
}

func seedSearch(t *testing.T, k *disk, agent string, key routing.Key, text string) {
	t.Helper()
	e := k.begin(agent, key)
	st, _ := k.mgr.Store(agent)
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(context.Background(), sessions.UserText(text, time.Now())); err != nil {
		t.Fatal(err)
	}
}

func hitKeys(r searchResult) []string {
	var out []string
	for _, h := range r.Hits {
		s := h.SessionKey
		if h.Agent != "" {
			s = h.Agent + "|" + s
		}
		if h.ThisSession {
			s += " (this)"
		}
		out = append(out, s)
	}
	return out
}

func TestSessionsSearchToolScopes(t *testing.T) {
	allow := func(scope string) Tools {
		return Tools{Allow: []string{"sessions_search"}, SessionsSearch: SearchToolConfig{Scope: scope}}
	}
	list := []Agent{
		{ID: "main", Tools: allow("")},
		{ID: "ops", Tools: allow(SearchScopeAll)},
		{ID: "solo", Tools: allow(SearchScopeSession)},
		{ID: "plain"},
	}
	k := openDisk(t, t.TempDir(), Defaults{}, list, &fakeProvider{name: "fake"})
	key := func(agent, peer string) routing.Key {
		kk, err := routing.PeerKey(agent, "telegram", "", routing.Direct, peer)
		if err != nil {
			t.Fatal(err)
		}
		return kk
	}
	a, b := key("main", "1"), key("main", "2")
	seedSearch(t, k, "main", a, "tulip in chat one")
	seedSearch(t, k, "main", b, "tulip in chat two")
	seedSearch(t, k, "ops", key("ops", "9"), "tulip for ops")
	seedSearch(t, k, "solo", key("solo", "5"), "tulip solo")
	seedSearch(t, k, "solo", key("solo", "6"), "tulip elsewhere")

	// Default scope: the agent's own sessions, never another agent's.
	r, offered := searchTurn(t, k, "main", a, map[string]any{"query": "TULIP"})
	if !offered || strings.Join(hitKeys(r), ",") != b.String()+","+a.String()+" (this)" {
		t.Errorf("scope agent: offered %v, hits %v", offered, hitKeys(r))
	}
	r, _ = searchTurn(t, k, "main", a, map[string]any{"query": "tulip", "agent": "ops"})
	if len(r.Hits) != 0 || !strings.Contains(r.Err, "only its own sessions") {
		t.Errorf("scope agent asking for ops: %+v", r)
	}
	// Scope all: every agent, named in each hit; an agent filter works.
	r, _ = searchTurn(t, k, "ops", key("ops", "9"), map[string]any{"query": "tulip", "limit": 3})
	if len(r.Hits) != 3 {
		t.Errorf("scope all, limit 3: %v", hitKeys(r))
	}
	r, _ = searchTurn(t, k, "ops", key("ops", "9"), map[string]any{"query": "tulip", "agent": "main"})
	if strings.Join(hitKeys(r), ",") != "main|"+b.String()+",main|"+a.String() {
		t.Errorf("scope all, agent main: %v", hitKeys(r))
	}
	// Scope session: this chat only.
	r, _ = searchTurn(t, k, "solo", key("solo", "5"), map[string]any{"query": "tulip"})
	if strings.Join(hitKeys(r), ",") != key("solo", "5").String()+" (this)" {
		t.Errorf("scope session: %v", hitKeys(r))
	}
	// Bad arguments are tool errors the model reads.
	for _, args := range []map[string]any{{}, {"query": "?!"}, {"query": "tulip", "since": "whenever"}} {
		r, _ = searchTurn(t, k, "main", a, args)
		if r.Err == "" || len(r.Hits) != 0 {
			t.Errorf("args %v: %+v, want an error", args, r)
		}
	}
	// Off unless allowed.
	r, offered = searchTurn(t, k, "plain", key("plain", "1"), map[string]any{"query": "tulip"})
	if offered || !strings.Contains(r.Err, `unknown tool "sessions_search"`) {
		t.Errorf("without tools.allow: offered %v, result %+v", offered, r)
	}
}

func TestSearchToolConfigValidate(t *testing.T) {
	if err := (Agent{ID: "main", Tools: Tools{SessionsSearch: SearchToolConfig{Scope: "everyone"}}}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "tools.sessionsSearch.scope") {
		t.Errorf("bad scope: %v", err)
	}
	for _, s := range []string{"", "session", "agent", "all"} {
		if err := (Agent{ID: "main", Tools: Tools{Allow: []string{"sessions_search"}, SessionsSearch: SearchToolConfig{Scope: s}}}).Validate(); err != nil {
			t.Errorf("scope %q: %v", s, err)
		}
	}
}
