package filestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

func writeIndexFile(t *testing.T, state, text string) string {
	t.Helper()
	dir := filepath.Join(state, "agents", "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, indexName)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// seed000Index is the index of the first design document (seed 000).
const seed000Index = `{
  "sessions": {
    "ses-1708300000000": {
      "id": "ses-1708300000000",
      "agentId": "main",
      "filePath": "ses-1708300000000.jsonl",
      "title": "payment.py concurrency",
      "messageCount": 12,
      "createdAt": 1708300000000,
      "lastAt": 1708301234567,
      "tokenEstimate": 45000
    }
  }
}`

// TestSeed000IndexIsReadOrRefused: a seed-000 index is refused with an
// error that names its layout (not read as one phantom entry with an empty
// key and id), doctor reports it as index-foreign without a fix, and the
// file is left as it was.
func TestSeed000IndexIsReadOrRefused(t *testing.T) {
	state := t.TempDir()
	path := writeIndexFile(t, state, seed000Index)
	m, err := Open(Options{StateDir: state, CacheTTL: -1})
	if err == nil {
		st, serr := m.Store("main")
		if serr == nil {
			_, err = st.List()
		} else {
			err = serr
		}
		m.Close()
	}
	if !errors.Is(err, ErrSeed000Index) || !strings.Contains(err.Error(), "seed-000") || !strings.Contains(err.Error(), path) {
		t.Fatalf("opening a seed-000 index: %v, want ErrSeed000Index naming %s", err, path)
	}
	probs, err := Check(context.Background(), state, sessions.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, p := range probs {
		if p.Code == sessions.CodeIndexForeign && p.Path == path && !p.Fixable && strings.Contains(p.Message, "lastAt") {
			found = true
		}
		if p.Code == sessions.CodeIndexUnreadable {
			t.Errorf("doctor calls a seed-000 index damaged (%+v): its fix would drop its sessions", p)
		}
	}
	if !found {
		t.Fatalf("doctor problems %+v, want index-foreign for %s, not fixable", probs, path)
	}
	if b, _ := os.ReadFile(path); string(b) != seed000Index {
		t.Fatalf("the seed-000 index was changed:\n%s", b)
	}
}

// TestOpenClawIndexRoundTrip: an index of the reference system's JSON-era
// releases (keyed by session key with no sessionKey member, updatedAt in
// epoch milliseconds and no other clock, lastThreadId a number, fields
// only it knows) loads with the key in sessionKey and the three clocks at
// updatedAt, and a write-back keeps the fields it does not know.
func TestOpenClawIndexRoundTrip(t *testing.T) {
	state := t.TempDir()
	at := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	const key = "agent:main:telegram:group:-1001:topic:7"
	path := writeIndexFile(t, state, `{
  "`+key+`": {
    "sessionId": "0b7e3c55-9a53-4b43-9d6d-0d8e5a1f2c11",
    "updatedAt": `+ms+`,
    "chatType": "group",
    "lastThreadId": 7,
    "thinkingLevel": "high",
    "groupActivation": "always",
    "origin": {"provider": "telegram", "surface": "group"},
    "inputTokens": 12
  }
}`)
	m, err := Open(Options{StateDir: state, CacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	k, err := routing.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	e, ok, err := st.Get(k)
	if err != nil || !ok {
		t.Fatalf("Get: %v %v", ok, err)
	}
	if e.SessionKey != key || e.LastThreadID != "7" || e.InputTokens != 12 {
		t.Errorf("entry = %+v, want sessionKey %s, lastThreadId 7", e, key)
	}
	for name, c := range map[string]time.Time{"createdAt": e.CreatedAt, "sessionStartedAt": e.SessionStartedAt,
		"lastInteractionAt": e.LastInteractionAt, "updatedAt": e.UpdatedAt} {
		if !c.Equal(at) {
			t.Errorf("%s = %v, want %v (updatedAt)", name, c, at)
		}
	}
	if _, err := st.Patch(t.Context(), k, func(e *sessions.Entry) error { e.Label = "ops"; return nil }); err != nil {
		t.Fatal(err)
	}
	list, err := st.List()
	if err != nil || len(list) != 1 || list[0].SessionKey != key {
		t.Fatalf("List = %+v, %v; want one entry keyed %s", list, err, key)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"sessionKey":"` + key + `"`, `"label":"ops"`, `"thinkingLevel":"high"`,
		`"groupActivation":"always"`, `"origin":{"provider":"telegram","surface":"group"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("written back without %s:\n%s", want, b)
		}
	}
	// And read again (our format now, the unknown members beside it).
	idx, err := ReadIndex(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	// thinkingLevel and groupActivation are fields of ours (/think,
	// /activation); origin is kept as an unknown member.
	if got := idx[key]; got.Label != "ops" || got.ThinkingLevel != "high" || got.GroupActivation != "always" ||
		got.Extra != `{"origin":{"provider":"telegram","surface":"group"}}` {
		t.Fatalf("re-read entry: label %q thinking %q activation %q extra %s", got.Label, got.ThinkingLevel, got.GroupActivation, got.Extra)
	}
}

// TestExtraMembersInCompactForm: unknown members survive packing, decoding
// and the JSON a write produces, and known names cannot hide in them.
func TestExtraMembersInCompactForm(t *testing.T) {
	e := sampleEntry()
	e.Extra = `{"b": [1, 2], "a": "x"}`
	c, err := packEntry(&e)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.entry(); got.Extra != `{"a":"x","b":[1,2]}` || got.SessionID != e.SessionID || got.MessageCount != e.MessageCount {
		t.Fatalf("entry() = %+v", got)
	}
	j := string(c.appendJSON(nil))
	if !strings.HasSuffix(j, `,"a":"x","b":[1,2]}`) {
		t.Fatalf("appendJSON = %s", j)
	}
	back, err := decodeEntry([]byte(j), false)
	if err != nil || back.Extra != `{"a":"x","b":[1,2]}` || !sameEntry(back, c.entry()) {
		t.Fatalf("decodeEntry(appendJSON) = %+v, %v", back, err)
	}
	e.Extra = `{"sessionId": "x"}`
	if _, err := packEntry(&e); err == nil {
		t.Fatal("an extra member named like a field was accepted")
	}
}
