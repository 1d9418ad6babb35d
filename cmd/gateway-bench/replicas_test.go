package main

import (
	"testing"
	"time"

	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/configs"
)

// TestDaemonConfigLoads loads the YAML the bench gives a daemon, alone
// and as a replica, through the daemon's own loader.
func TestDaemonConfigLoads(t *testing.T) {
	tg := telegramtest.NewServer(telegramtest.Options{})
	defer tg.Close()
	base := daemonSpec{dir: t.TempDir(), httpAddr: "127.0.0.1:1", tg: tg, modelURL: "http://127.0.0.1:2/v1", streaming: "off"}
	alone, onPG, replica := base, base, base
	onPG.dbURL = "postgres:///bench?host=/tmp"
	replica.dbURL, replica.replicaID = onPG.dbURL, "replica-2"
	tests := []struct {
		name              string
		spec              daemonSpec
		backend, mode, id string
		replicas          bool
	}{
		{"files, polling", alone, configs.StorageFiles, telegram.ModePolling, "", false},
		{"postgres, polling", onPG, "postgres", telegram.ModePolling, "", false},
		{"replica: webhook", replica, "postgres", telegram.ModeWebhook, "replica-2", true},
	}
	for _, tt := range tests {
		cfg, err := configs.LoadBytes([]byte(tt.spec.config()), nil)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tt.name, err, tt.spec.config())
		}
		acc := cfg.Channels.Telegram.Accounts["default"].WithDefaults()
		p := cfg.Storage.Postgres
		if cfg.Storage.Backend != tt.backend || acc.Mode != tt.mode || p.ReplicaID != tt.id || p.Replicas != tt.replicas {
			t.Errorf("%s: backend %q, telegram mode %q, replicaId %q, replicas %v; want %q, %q, %q, %v", tt.name,
				cfg.Storage.Backend, acc.Mode, p.ReplicaID, p.Replicas, tt.backend, tt.mode, tt.id, tt.replicas)
		}
		if tt.mode == telegram.ModeWebhook && acc.Webhook.SecretToken != webhookSecret {
			t.Errorf("%s: webhook secret %q, want the poster's %q", tt.name, acc.Webhook.SecretToken, webhookSecret)
		}
	}
}

// TestReplicaFor checks the round robin: each replica gets its share, and
// one chat's consecutive messages go to different replicas even when the
// replica count divides the chat count.
func TestReplicaFor(t *testing.T) {
	const chats, msgs = 100, 1000
	for _, n := range []int{1, 2, 3} {
		share := make([]int, n)
		last := map[int]int{}
		for i := range msgs {
			r := replicaFor(i, chats, n, false)
			share[r]++
			if prev, ok := last[i%chats]; ok && n > 1 && prev == r {
				t.Fatalf("n=%d: message %d of chat %d on replica %d like the chat's previous one", n, i, i%chats, r)
			}
			last[i%chats] = r
		}
		for r, got := range share {
			if want := msgs / n; got < want-1 || got > want+1 {
				t.Errorf("n=%d: replica %d got %d messages, want %d±1", n, r, got, want)
			}
		}
		for i := range msgs { // by chat: a chat stays on its replica
			if r, first := replicaFor(i, chats, n, true), replicaFor(i%chats, chats, n, true); r != first {
				t.Fatalf("n=%d, by chat: message %d of chat %d on replica %d, its first on %d", n, i, i%chats, r, first)
			}
		}
	}
}

// TestKillOffsets: a duplicate's first copy after a kill signal (within
// killSlack) counts as after it, one before the next kill as before it
// with its distance, and one long after every kill is not placed.
func TestKillOffsets(t *testing.T) {
	base := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	kills := []time.Time{base, base.Add(time.Second)}
	firsts := []time.Time{
		base.Add(2 * time.Millisecond),             // after the first kill (in the socket)
		base.Add(-300 * time.Microsecond),          // just before it
		base.Add(time.Second - 5*time.Millisecond), // before the second
		base.Add(3 * time.Second),                  // after every kill
	}
	after, before, longest := killOffsets(firsts, kills)
	if after != 1 || before != 2 || longest != 5*time.Millisecond {
		t.Errorf("killOffsets = %d after, %d before, longest %s; want 1, 2, 5ms", after, before, longest)
	}
}
