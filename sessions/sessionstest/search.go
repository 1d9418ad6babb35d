package sessionstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/searchtext"
)

// TestSearch is the conformance suite of sessions.Searcher: what a search
// finds, in which order, with which filters, and that reset, delete and
// switch change what it finds at once.
func TestSearch(t *testing.T, open BackendOpener) {
	cases := []struct {
		name string
		fn   func(*testing.T, BackendOpener)
	}{
		{"Matching", testSearchMatching},
		{"Filters", testSearchFilters},
		{"Limit", testSearchLimit},
		{"ResetDeleteSwitch", testSearchLifecycle},
		{"BadQueries", testSearchBadQueries},
		{"OperatorsAreWords", testSearchOperatorsAreWords},
		{"EqualTimestamps", testSearchEqualTimestamps},
		{"WordsInsideTokens", testSearchWordsInsideTokens},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

// searchBase is the time of the first message of the fixtures.
var searchBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// sfix is a search fixture on one backend.
type sfix struct {
	t   *testing.T
	ctx context.Context
	b   sessions.Backend
	n   int // messages appended, for distinct timestamps
}

func newSFix(t *testing.T, open BackendOpener) *sfix {
	return &sfix{t: t, ctx: context.Background(), b: open(t)}
}

func (f *sfix) store(agent string) sessions.AgentStore {
	f.t.Helper()
	st, err := f.b.Store(agent)
	if err != nil {
		f.t.Fatalf("Store(%s): %v", agent, err)
	}
	return st
}

// group is the key of a Telegram group (thread "" for the group itself).
func (f *sfix) group(agent, peer, topic string) routing.Key {
	f.t.Helper()
	k, err := routing.PeerKey(agent, "telegram", "", routing.Group, peer)
	if err == nil && topic != "" {
		k, err = k.WithThread(routing.Topic, topic)
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return k
}

// say appends messages (alternating user/assistant, one minute apart) to
// key's current session and returns its entry.
func (f *sfix) say(k routing.Key, texts ...string) sessions.Entry {
	f.t.Helper()
	st := f.store(k.Agent)
	e, _, err := st.Begin(f.ctx, k, sessions.Origin{Channel: "telegram", At: searchBase})
	if err != nil {
		f.t.Fatalf("Begin(%s): %v", k, err)
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		f.t.Fatalf("TranscriptOf: %v", err)
	}
	for _, text := range texts {
		at := searchBase.Add(time.Duration(f.n) * time.Minute)
		m := sessions.UserText(text, at)
		if f.n%2 == 1 {
			m.Role = sessions.RoleAssistant
		}
		f.n++
		if _, err := tr.Append(f.ctx, m); err != nil {
			f.t.Fatalf("Append: %v", err)
		}
	}
	return e
}

func (f *sfix) search(q sessions.SearchQuery) []sessions.SearchHit {
	f.t.Helper()
	hits, err := f.b.Search().Search(f.ctx, q)
	if err != nil {
		f.t.Fatalf("Search(%+v): %v", q, err)
	}
	return hits
}

// snippets renders hits as "agent|key|role|snippet" lines.
func snippets(hits []sessions.SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s|%s|%s|%s", h.Agent, h.SessionKey, h.Role, h.Snippet)
	}
	return out
}

func (f *sfix) want(what string, q sessions.SearchQuery, want ...string) []sessions.SearchHit {
	f.t.Helper()
	hits := f.search(q)
	if want == nil {
		want = []string{}
	}
	if diff := cmp.Diff(want, snippets(hits)); diff != "" {
		f.t.Errorf("%s: Search(%q) (-want +got):\n%s", what, q.Text, diff)
	}
	return hits
}

func testSearchMatching(t *testing.T, open BackendOpener) {
	f := newSFix(t, open)
	g := f.group("main", "-1001", "")
	key := g.String()
	e := f.say(g, "The deploy failed on Tuesday", "Rollback the DEPLOY please", "lunch at noon?", "Deploy went fine after the rollback")
	f.want("one word, any case, newest first", sessions.SearchQuery{Text: "deploy"},
		"main|"+key+"|assistant|Deploy went fine after the rollback",
		"main|"+key+"|assistant|Rollback the DEPLOY please",
		"main|"+key+"|user|The deploy failed on Tuesday")
	f.want("every word must occur", sessions.SearchQuery{Text: "Rollback deploy"},
		"main|"+key+"|assistant|Deploy went fine after the rollback",
		"main|"+key+"|assistant|Rollback the DEPLOY please")
	f.want("whole words only", sessions.SearchQuery{Text: "deplo"})
	f.want("no match", sessions.SearchQuery{Text: "kubernetes"})
	hits := f.want("one hit", sessions.SearchQuery{Text: "lunch"}, "main|"+key+"|user|lunch at noon?")
	h := hits[0]
	if h.SessionID != e.SessionID || len(h.EntryID) != 8 || !h.At.Equal(searchBase.Add(2*time.Minute)) {
		t.Errorf("hit = %+v, want session %s, an 8-hex entry id, at %v", h, e.SessionID, searchBase.Add(2*time.Minute))
	}
	tr, err := f.store("main").TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tr.Context(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.EntryIDs) != 4 || c.EntryIDs[2] != h.EntryID {
		t.Errorf("hit entry id %s, transcript's entries %v", h.EntryID, c.EntryIDs)
	}

	long := strings.Repeat("filler words here ", 30) + "needle" + strings.Repeat(" more filler text", 30)
	f.say(g, long)
	hits = f.search(sessions.SearchQuery{Text: "needle"})
	if len(hits) != 1 || !strings.Contains(hits[0].Snippet, "needle") || !strings.HasPrefix(hits[0].Snippet, "…") ||
		!strings.HasSuffix(hits[0].Snippet, "…") || len([]rune(hits[0].Snippet)) > searchtext.SnippetRunes+2 {
		t.Errorf("snippet of a long message = %q, want the match with … on both sides", snippets(hits))
	}
}

func testSearchFilters(t *testing.T, open BackendOpener) {
	f := newSFix(t, open)
	g1, topic := f.group("main", "-1001", ""), f.group("main", "-1001", "7")
	g2, other := f.group("main", "-1002", ""), f.group("ops", "-1001", "")
	f.say(g1, "release notes for alpha")
	f.say(topic, "release notes for beta")
	f.say(g2, "release notes for gamma")
	f.say(other, "release notes for delta")
	f.want("no filter", sessions.SearchQuery{Text: "release notes"},
		"ops|"+other.String()+"|assistant|release notes for delta",
		"main|"+g2.String()+"|user|release notes for gamma",
		"main|"+topic.String()+"|assistant|release notes for beta",
		"main|"+g1.String()+"|user|release notes for alpha")
	f.want("agent", sessions.SearchQuery{Text: "release", Agents: []string{"ops"}},
		"ops|"+other.String()+"|assistant|release notes for delta")
	f.want("agents", sessions.SearchQuery{Text: "release", Agents: []string{"main", "nobody"}},
		"main|"+g2.String()+"|user|release notes for gamma",
		"main|"+topic.String()+"|assistant|release notes for beta",
		"main|"+g1.String()+"|user|release notes for alpha")
	f.want("room: a group key takes its topics", sessions.SearchQuery{Text: "release", Room: g1.String()},
		"main|"+topic.String()+"|assistant|release notes for beta",
		"main|"+g1.String()+"|user|release notes for alpha")
	f.want("room: a topic key is that topic", sessions.SearchQuery{Text: "release", Room: topic.String()},
		"main|"+topic.String()+"|assistant|release notes for beta")
	f.want("room: a peer id, every agent", sessions.SearchQuery{Text: "release", Room: "-1001"},
		"ops|"+other.String()+"|assistant|release notes for delta",
		"main|"+topic.String()+"|assistant|release notes for beta",
		"main|"+g1.String()+"|user|release notes for alpha")
	f.want("room and agent", sessions.SearchQuery{Text: "release", Room: "-1001", Agents: []string{"ops"}},
		"ops|"+other.String()+"|assistant|release notes for delta")
	f.want("since", sessions.SearchQuery{Text: "release", Since: searchBase.Add(2 * time.Minute)},
		"ops|"+other.String()+"|assistant|release notes for delta",
		"main|"+g2.String()+"|user|release notes for gamma")
	f.want("since excludes everything", sessions.SearchQuery{Text: "release", Since: searchBase.Add(time.Hour)})
	f.want("unknown room", sessions.SearchQuery{Text: "release", Room: "-999"})
}

func testSearchLimit(t *testing.T, open BackendOpener) {
	f := newSFix(t, open)
	g := f.group("main", "-1001", "")
	var texts []string
	for i := range 30 {
		texts = append(texts, fmt.Sprintf("status report %02d", i))
	}
	f.say(g, texts...)
	hits := f.search(sessions.SearchQuery{Text: "status report", Limit: 5})
	var got []string
	for _, h := range hits {
		got = append(got, h.Snippet)
	}
	want := []string{"status report 29", "status report 28", "status report 27", "status report 26", "status report 25"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("limit 5 (-want +got):\n%s", diff)
	}
	if n := len(f.search(sessions.SearchQuery{Text: "status"})); n != sessions.DefaultSearchLimit {
		t.Errorf("default limit: %d hits, want %d", n, sessions.DefaultSearchLimit)
	}
	if n := len(f.search(sessions.SearchQuery{Text: "status", Limit: sessions.MaxSearchLimit})); n != 30 {
		t.Errorf("limit %d: %d hits, want all 30", sessions.MaxSearchLimit, n)
	}
}

func testSearchLifecycle(t *testing.T, open BackendOpener) {
	f := newSFix(t, open)
	g, h := f.group("main", "-1001", ""), f.group("main", "-1002", "")
	old := f.say(g, "the secret word is avocado")
	f.say(h, "avocado toast in the other group")
	f.want("before reset", sessions.SearchQuery{Text: "avocado"},
		"main|"+h.String()+"|assistant|avocado toast in the other group",
		"main|"+g.String()+"|user|the secret word is avocado")
	st := f.store("main")
	if _, err := st.Reset(f.ctx, g, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	f.want("after reset", sessions.SearchQuery{Text: "avocado"},
		"main|"+h.String()+"|assistant|avocado toast in the other group")
	f.say(g, "a new avocado after the reset")
	f.want("the new session is searched", sessions.SearchQuery{Text: "avocado"},
		"main|"+g.String()+"|user|a new avocado after the reset",
		"main|"+h.String()+"|assistant|avocado toast in the other group")
	if err := st.Delete(f.ctx, h); err != nil {
		t.Fatal(err)
	}
	f.want("after delete", sessions.SearchQuery{Text: "avocado"},
		"main|"+g.String()+"|user|a new avocado after the reset")
	if _, err := st.Switch(f.ctx, g, old.SessionID); err != nil {
		t.Fatal(err)
	}
	f.want("after switching back", sessions.SearchQuery{Text: "avocado"},
		"main|"+g.String()+"|user|the secret word is avocado")
}

func testSearchBadQueries(t *testing.T, open BackendOpener) {
	f := newSFix(t, open)
	f.say(f.group("main", "-1001", ""), "hello")
	for _, q := range []sessions.SearchQuery{
		{Text: ""},
		{Text: "   "},
		{Text: "?!"},
		{Text: strings.Repeat("a", sessions.MaxSearchQuery+1)},
		{Text: "hello", Limit: -1},
		{Text: "hello", Limit: sessions.MaxSearchLimit + 1},
		{Text: "hello", Agents: []string{"Bad Agent!"}},
		{Text: "hello", Room: "agent:main:telegram:group:x:y:z/.."},
		{Text: "hello\x00"},
	} {
		_, err := f.b.Search().Search(f.ctx, q)
		if !errors.Is(err, sessions.ErrBadQuery) {
			t.Errorf("Search(%+v) = %v, want ErrBadQuery", q, err)
		}
	}
}

// testSearchOperatorsAreWords: a query is words, all of which must occur,
// on every backend: "or", a leading "-", quotes and other search-box
// syntax are not operators (a search for a chat id "-1001" or for
// "cats or dogs" must not turn into "everything without 1001" or "either").
func testSearchOperatorsAreWords(t *testing.T, open BackendOpener) {
	f := newSFix(t, open)
	g := f.group("main", "-1001", "")
	key := g.String()
	f.say(g, "cats only here", "dogs only here", "cats or dogs, either")
	f.want("or is a word", sessions.SearchQuery{Text: "cats or dogs"},
		"main|"+key+"|user|cats or dogs, either")
	f.want("OR is a word", sessions.SearchQuery{Text: "dogs OR cats"},
		"main|"+key+"|user|cats or dogs, either")
	f.want("a leading minus does not negate", sessions.SearchQuery{Text: "-dogs"},
		"main|"+key+"|user|cats or dogs, either",
		"main|"+key+"|assistant|dogs only here")
	f.want("quotes do not make a phrase", sessions.SearchQuery{Text: `"dogs cats"`},
		"main|"+key+"|user|cats or dogs, either")
	f.want("tsquery syntax is text", sessions.SearchQuery{Text: `!(dogs) & only:*`},
		"main|"+key+"|assistant|dogs only here")
}

// testSearchEqualTimestamps: messages of one session with the same
// timestamp come newest appended first, and a limit keeps the newest.
func testSearchEqualTimestamps(t *testing.T, open BackendOpener) {
	f := newSFix(t, open)
	g := f.group("main", "-1001", "")
	st := f.store("main")
	e, _, err := st.Begin(f.ctx, g, sessions.Origin{Channel: "telegram", At: searchBase})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"tie one", "tie two", "tie three"} {
		if _, err := tr.Append(f.ctx, sessions.UserText(text, searchBase)); err != nil {
			t.Fatal(err)
		}
	}
	key := g.String()
	f.want("equal times: append order, newest first", sessions.SearchQuery{Text: "tie"},
		"main|"+key+"|user|tie three", "main|"+key+"|user|tie two", "main|"+key+"|user|tie one")
	f.want("a limit keeps the newest", sessions.SearchQuery{Text: "tie", Limit: 1},
		"main|"+key+"|user|tie three")
}

// testSearchWordsInsideTokens: every backend splits text into
// searchtext.Tokens' words, so the parts of an address, a file name, a
// path or a version are words, and two characters of a run of Chinese or
// Japanese text are found anywhere in it (PostgreSQL's own parser keeps
// each of these whole).
func testSearchWordsInsideTokens(t *testing.T, open BackendOpener) {
	f := newSFix(t, open)
	g := f.group("main", "-1001", "")
	key := g.String()
	f.say(g, "mail foo@example.com today", "run ./deploy.sh now", "cat /etc/passwd please",
		"upgrade to v1.2.3 tonight", "这是会话存储的测试", "セッションを保存しました")
	f.want("the domain of an address", sessions.SearchQuery{Text: "example"},
		"main|"+key+"|user|mail foo@example.com today")
	f.want("the user of an address", sessions.SearchQuery{Text: "FOO"},
		"main|"+key+"|user|mail foo@example.com today")
	f.want("a file name's stem", sessions.SearchQuery{Text: "deploy"},
		"main|"+key+"|assistant|run ./deploy.sh now")
	f.want("a file name's extension", sessions.SearchQuery{Text: "sh"},
		"main|"+key+"|assistant|run ./deploy.sh now")
	f.want("a path's part", sessions.SearchQuery{Text: "passwd"},
		"main|"+key+"|user|cat /etc/passwd please")
	f.want("a path queried whole is its parts", sessions.SearchQuery{Text: "/etc/passwd"},
		"main|"+key+"|user|cat /etc/passwd please")
	f.want("a version's part", sessions.SearchQuery{Text: "v1"},
		"main|"+key+"|assistant|upgrade to v1.2.3 tonight")
	f.want("a version queried whole is its parts", sessions.SearchQuery{Text: "v1.2.3"},
		"main|"+key+"|assistant|upgrade to v1.2.3 tonight")
	f.want("a Chinese word inside a run", sessions.SearchQuery{Text: "会话"},
		"main|"+key+"|user|这是会话存储的测试")
	f.want("a longer Chinese word inside a run", sessions.SearchQuery{Text: "会话存储"},
		"main|"+key+"|user|这是会话存储的测试")
	f.want("a Japanese word inside a run", sessions.SearchQuery{Text: "保存"},
		"main|"+key+"|assistant|セッションを保存しました")
	f.want("characters not adjacent in the run", sessions.SearchQuery{Text: "会存"})
}
