package filestore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestIndexWithMillisecondTimes: a sessions.json written by the reference
// system's JSON-era releases (times as epoch milliseconds) loads, and is
// written back in this package's format.
func TestIndexWithMillisecondTimes(t *testing.T) {
	dir := t.TempDir()
	sdir := filepath.Join(dir, "agents", "main", "sessions")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Recent times, so maintenance (pruneAfter 30 days) keeps the entries.
	base := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	ms := func(d time.Duration) string { return strconv.FormatInt(base.Add(d).UnixMilli(), 10) }
	legacy := strings.NewReplacer("T0", ms(0), "T1", ms(time.Hour+123*time.Millisecond), "TH", ms(time.Hour),
		"S0", base.Format(time.RFC3339), "S1", base.Add(time.Hour).Format(time.RFC3339)).Replace(`{
  "agent:main:telegram:direct:42": {
    "sessionId": "0b7e3c55-9a53-4b43-9d6d-0d8e5a1f2c11",
    "createdAt": T0,
    "updatedAt": T1,
    "sessionStartedAt": T0.5,
    "lastInteractionAt": TH,
    "channel": "telegram",
    "inputTokens": 12
  },
  "agent:main:telegram:direct:43": {
    "sessionId": "1b7e3c55-9a53-4b43-9d6d-0d8e5a1f2c12",
    "createdAt": "S0",
    "updatedAt": "S1"
  }
}`)
	if err := os.WriteFile(filepath.Join(sdir, "sessions.json"), []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := Open(Options{StateDir: dir, CacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	k, err := routing.Parse("agent:main:telegram:direct:42")
	if err != nil {
		t.Fatal(err)
	}
	e, ok, err := st.Get(k)
	if err != nil || !ok {
		t.Fatalf("legacy entry: %v %v", ok, err)
	}
	want := base.Add(time.Hour + 123*time.Millisecond)
	if !e.UpdatedAt.Equal(want) || !e.CreatedAt.Equal(base) ||
		!e.SessionStartedAt.Equal(base.Add(500*time.Microsecond)) || e.InputTokens != 12 {
		t.Fatalf("entry = %+v", e)
	}
	// A write (a new session) and a clean close rewrite the index in our format.
	if _, _, err := st.Begin(t.Context(), routing.Key{Agent: "main", Channel: "telegram", Kind: routing.Direct, Peer: "44"}, sessions.Origin{}); err != nil {
		t.Fatal(err)
	}
	idx, err := ReadIndex(sdir)
	if err != nil || !idx["agent:main:telegram:direct:42"].UpdatedAt.Equal(want) {
		t.Fatalf("ReadIndex (doctor's view): %v %+v", err, idx["agent:main:telegram:direct:42"])
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(sdir, "sessions.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), ms(time.Hour+123*time.Millisecond)) ||
		!strings.Contains(string(b), `"`+want.Format(time.RFC3339Nano)+`"`) || !strings.Contains(string(b), "direct:43") {
		t.Fatalf("index not rewritten in our format:\n%s", b)
	}
}

func TestFlexTimeRefusesNonsense(t *testing.T) {
	for _, in := range []string{`{"createdAt": true}`, `{"createdAt": 1e300}`, `{"createdAt": "yesterday"}`, `{"createdAt": [1]}`} {
		var e legacyEntry
		if err := json.Unmarshal([]byte(in), &e); err == nil {
			t.Errorf("%s accepted: %+v", in, e)
		}
	}
	var e legacyEntry
	// A clock the entry lacks starts at updatedAt.
	if err := json.Unmarshal([]byte(`{"createdAt": null, "updatedAt": -1000}`), &e); err != nil ||
		!e.CreatedAt.Equal(e.UpdatedAt) || !e.UpdatedAt.Equal(time.UnixMilli(-1000)) {
		t.Fatalf("null / negative: %v %+v", err, e)
	}
}
