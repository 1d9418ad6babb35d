package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestSessionsShowDeliveryContext (issue 27): gateway sessions show prints
// where the session's latest reply went, and its JSON carries the entry's
// deliveryContext object.
func TestSessionsShowDeliveryContext(t *testing.T) {
	state := t.TempDir()
	mgr, err := filestore.Open(filestore.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	st, err := mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	k, err := routing.PeerKey("main", "telegram", "", routing.Group, "-1001234")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "telegram", ChatType: "group", AccountID: "default",
		To: k.Peer, From: "42", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Patch(ctx, k, func(e *sessions.Entry) error {
		e.DeliveryContext = sessions.DeliveryContext{Channel: "telegram", AccountID: "default", To: "-1001234", ThreadID: "7"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, state, "", "")
	out := gw(t, cfg, "sessions", "show", k.String()).want(t, 0).Stdout
	if !strings.Contains(out, "delivered to:") || !strings.Contains(out, "telegram/default chat -1001234 thread 7") {
		t.Errorf("sessions show without the delivery context:\n%s", out)
	}
	js := gw(t, cfg, "sessions", "show", k.String(), "--json").want(t, 0).Stdout
	if w := `"deliveryContext": {`; !strings.Contains(js, w) || !strings.Contains(js, `"threadId": "7"`) {
		t.Errorf("sessions show --json without the delivery context:\n%s", js)
	}
}
