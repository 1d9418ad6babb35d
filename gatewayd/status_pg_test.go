package gatewayd

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestStatusShowsLeaderElsewhere: on PostgreSQL with replicas, the
// Telegram poller runs on the leader; /api/status of the other replica
// shows the account standby with the leader's replica id, both list the
// replicas and the role's holder, and after the leader stops the other
// one reports itself connected and leading.
func TestStatusShowsLeaderElsewhere(t *testing.T) {
	url := pgtest.NewDatabase(t)
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	rec := &polls{}
	a := startReplica(t, "a", replicaConfig(filepath.Join(t.TempDir(), "a"), tg, model, url), url, rec, false)
	waitUntil(t, 30*time.Second, "a polls", func() bool { return !rec.firstBy("a", time.Time{}).IsZero() })
	b := startReplica(t, "b", replicaConfig(filepath.Join(t.TempDir(), "b"), tg, model, url), url, rec, false)

	account := func(st Status) ChannelStatus {
		for _, c := range st.Channels {
			if c.Channel == "telegram" {
				return c
			}
		}
		t.Fatalf("no telegram account in %+v", st.Channels)
		return ChannelStatus{}
	}
	var sa, sb Status
	waitUntil(t, time.Minute, "a leads and b stands by", func() bool {
		sa, sb = getStatus(t, a.addr), getStatus(t, b.addr)
		ca, cb := account(sa), account(sb)
		return ca.State == channels.ConnConnected && ca.Leader == "replica-a" &&
			cb.State == ConnStandby && cb.Leader == "replica-a"
	})
	if sb.Overall != StatusOK || sb.Replicas == nil || sb.Replicas.ReplicaID != "replica-b" || len(sb.Replicas.Replicas) != 2 {
		t.Fatalf("standby replica's status: overall %q, replicas %+v, problems %v", sb.Overall, sb.Replicas, sb.Problems)
	}
	if c := account(sb); c.Role != "telegram:default" {
		t.Errorf("role %q, want telegram:default", c.Role)
	}
	if sa.Storage.Kind != "postgres" || !sa.Storage.Healthy {
		t.Errorf("storage: %+v", sa.Storage)
	}

	a.stop(t)
	waitUntil(t, time.Minute, "b leads", func() bool {
		c := account(getStatus(t, b.addr))
		return c.State == channels.ConnConnected && c.Leader == "replica-b"
	})
}

// getStatus reads GET /api/status (200 or 503 carry a status).
func getStatus(t *testing.T, addr string) Status {
	t.Helper()
	res, err := http.Get("http://" + addr + "/api/status")
	if err != nil {
		t.Fatalf("GET /api/status: %v", err)
	}
	defer res.Body.Close()
	var st Status
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatalf("GET /api/status: %s: %v", res.Status, err)
	}
	want := http.StatusOK
	if st.Overall == StatusFailing {
		want = http.StatusServiceUnavailable
	}
	if res.StatusCode != want {
		t.Fatalf("GET /api/status: %s for overall %q", res.Status, st.Overall)
	}
	return st
}
