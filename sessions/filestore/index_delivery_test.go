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

// TestOpenClawDeliveryContextRoundTrip (issue 27): the deliveryContext
// object of a JSON-era OpenClaw index (a numeric threadId among its
// members) is read as the entry's DeliveryContext, not an unknown member,
// and written back as the same object after a change through the seam.
func TestOpenClawDeliveryContextRoundTrip(t *testing.T) {
	state := t.TempDir()
	ms := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
	const key = "agent:main:telegram:group:-100123:topic:7"
	path := writeIndexFile(t, state, `{
  "`+key+`": {
    "sessionId": "5d1e9a0e-3c1f-4f7e-8f4e-0c9d1b2a3e45",
    "updatedAt": `+ms+`,
    "lastThreadId": 7,
    "deliveryContext": {"channel": "telegram", "to": "-100123", "accountId": "default", "threadId": 7}
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
	want := sessions.DeliveryContext{Channel: "telegram", To: "-100123", AccountID: "default", ThreadID: "7"}
	if e.DeliveryContext != want || e.Extra != "" {
		t.Errorf("read delivery context %+v, extra %q; want %+v and nothing unknown", e.DeliveryContext, e.Extra, want)
	}
	if _, err := st.Patch(t.Context(), k, func(e *sessions.Entry) error { e.Label = "ops"; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if w := `"deliveryContext":{"channel":"telegram","to":"-100123","accountId":"default","threadId":"7"}`; !strings.Contains(string(b), w) {
		t.Errorf("written back without %s:\n%s", w, b)
	}
	idx, err := ReadIndex(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if got := idx[key]; got.DeliveryContext != want || got.Label != "ops" {
		t.Errorf("re-read: delivery context %+v label %q; want %+v, ops", got.DeliveryContext, got.Label, want)
	}
}
