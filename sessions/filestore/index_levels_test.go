package filestore

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestOpenClawEntryLevelsRoundTrip (issue 27): seed 002's entry fields
// verboseLevel, reasoningLevel, sendPolicy and responseUsage of a JSON-era
// OpenClaw index are read as fields of ours (not unknown members), a
// change through the seam is written back, and what this version does not
// know (origin among them) is still kept beside them.
func TestOpenClawEntryLevelsRoundTrip(t *testing.T) {
	state := t.TempDir()
	ms := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
	const key = "agent:main:discord:channel:42"
	path := writeIndexFile(t, state, `{
  "`+key+`": {
    "sessionId": "5d1e9a0e-3c1f-4f7e-8f4e-0c9d1b2a3e44",
    "updatedAt": `+ms+`,
    "verboseLevel": "on",
    "reasoningLevel": "stream",
    "sendPolicy": "deny",
    "responseUsage": "tokens",
    "deliveryContext": {"channel": "discord", "to": "channel:42", "accountId": "default"},
    "origin": {"provider": "discord"}
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
	if e.VerboseLevel != "on" || e.ReasoningLevel != "stream" || e.SendPolicy != sessions.SendDeny || e.ResponseUsage != "tokens" || e.Sends() {
		t.Errorf("read %q %q %q %q, want on, stream, deny, tokens", e.VerboseLevel, e.ReasoningLevel, e.SendPolicy, e.ResponseUsage)
	}
	if _, err := st.Patch(t.Context(), k, func(e *sessions.Entry) error { e.SendPolicy = sessions.SendAllow; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"verboseLevel":"on"`, `"reasoningLevel":"stream"`, `"sendPolicy":"allow"`, `"responseUsage":"tokens"`,
		`"deliveryContext":{"channel":"discord","to":"channel:42","accountId":"default"}`, `"origin":{"provider":"discord"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("written back without %s:\n%s", want, b)
		}
	}
	idx, err := ReadIndex(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if got := idx[key]; got.SendPolicy != "allow" || got.VerboseLevel != "on" || strings.Contains(got.Extra, "verboseLevel") || got.Extra != `{"origin":{"provider":"discord"}}` {
		t.Errorf("re-read: send policy %q verbose %q extra %s; want allow, on, only origin unknown", got.SendPolicy, got.VerboseLevel, got.Extra)
	}
}
