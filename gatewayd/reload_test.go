package gatewayd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/configs"
)

// fakeClock is a settable clock for the session store.
type fakeClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

func reloadYAML(stateDir, extra string) string {
	return "stateDir: " + stateDir + "\nhttp: {listen: \"127.0.0.1:0\"}\nlog: {level: debug, format: console}\n" + extra
}

// loadYAML is the config of y under a stateDir of /tmp/x (never created:
// for the functions that only read a config).
func loadYAML(t *testing.T, y string) *configs.Config {
	t.Helper()
	c, err := configs.LoadBytes([]byte("stateDir: /tmp/x\n"+y), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startFromFile runs a daemon with a config file path (so it is watched),
// as `gateway run --config path` does, and returns its HTTP address.
func startFromFile(t *testing.T, path string, clock *fakeClock) string {
	t.Helper()
	_, addr := startDaemonFromFile(t, path, clock)
	return addr
}

// startDaemonFromFile is startFromFile returning the daemon too. The
// test's cleanup stops it and waits for Run to return.
func startDaemonFromFile(t *testing.T, path string, clock *fakeClock) (*Daemon, string) {
	t.Helper()
	return startDaemonLogged(t, path, clock, zaptest.NewLogger(t))
}

// startDaemonLogged is startDaemonFromFile with the daemon's logger.
func startDaemonLogged(t *testing.T, path string, clock *fakeClock, log *zap.Logger) (*Daemon, string) {
	t.Helper()
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	ready := make(chan string, 1)
	d, err := New(cfg, Options{ConfigPath: path, Logger: log, Now: clock.now,
		OnReady: func(a string) { ready <- a }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("daemon exited: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("not ready")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("daemon did not stop")
		}
	})
	return d, addr
}

// chat posts one web chat message and returns the reply text and session id.
func chat(t *testing.T, addr, sessionID, text string) (reply, sid string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": text, "sessionId": sessionID})
	resp, err := http.Post("http://"+addr+"/api/agents/main/chat", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d)
			switch event {
			case "delta":
				reply += d["text"].(string)
			case "error":
				t.Fatalf("chat error event: %v", d)
			case "done":
				sid, _ = d["sessionId"].(string)
				return reply, sid
			}
		}
	}
	t.Fatalf("stream ended without done: %v", sc.Err())
	return "", ""
}

// waitQueueMode polls the session status until /queue reports mode.
func waitStatus(t *testing.T, addr, sid, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		last, _ = chat(t, addr, sid, "/status")
		if strings.Contains(last, want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("status never showed %q; last: %s", want, last)
}

func TestHotReloadSaveStyles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	write := func(mode string) string {
		return reloadYAML(state, "messages: {queue: {mode: "+mode+"}}\n")
	}
	if err := os.WriteFile(path, []byte(write("collect")), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startFromFile(t, path, &fakeClock{})
	_, sid := chat(t, addr, "", "hello")
	waitStatus(t, addr, sid, "Queue: collect")

	styles := []struct {
		name string
		save func(content string) error
		mode string
	}{
		{"in place", func(c string) error { return os.WriteFile(path, []byte(c), 0o600) }, "followup"},
		{"rename over", func(c string) error {
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, []byte(c), 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, path)
		}, "steer"},
		{"vim style", func(c string) error {
			if err := os.Rename(path, path+"~"); err != nil {
				return err
			}
			if err := os.WriteFile(path, []byte(c), 0o600); err != nil {
				return err
			}
			return os.Remove(path + "~")
		}, "interrupt"},
		{"delete and recreate", func(c string) error {
			if err := os.Remove(path); err != nil {
				return err
			}
			time.Sleep(300 * time.Millisecond)
			return os.WriteFile(path, []byte(c), 0o600)
		}, "collect"},
	}
	for _, s := range styles {
		if err := s.save(write(s.mode)); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		waitStatus(t, addr, sid, "Queue: "+s.mode)
	}

	// An invalid edit is rejected: the running config stays, messages flow.
	if err := os.WriteFile(path, []byte(write("shout")), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	waitStatus(t, addr, sid, "Queue: collect")
	if reply, _ := chat(t, addr, sid, "still there?"); !strings.Contains(reply, "still there?") {
		t.Fatalf("reply after invalid edit = %q", reply)
	}
	if err := os.WriteFile(path, []byte("{{{ not yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	waitStatus(t, addr, sid, "Queue: collect")
}

func TestHotReloadResetPolicyAppliesToNextMessage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte(reloadYAML(state, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{}
	addr := startFromFile(t, path, clock)
	_, sid := chat(t, addr, "", "first")
	clock.advance(3 * time.Hour)
	_, sid2 := chat(t, addr, sid, "after three idle hours, policy off")
	if sid2 != sid {
		t.Fatalf("reset with policy off: %s -> %s", sid, sid2)
	}
	policy := "session: {resetByChannel: {web: {mode: idle, idleMinutes: 60}}}\n"
	if err := os.WriteFile(path, []byte(reloadYAML(state, policy)), 0o600); err != nil {
		t.Fatal(err)
	}
	// Wait until the reload is applied (the next idle gap decides).
	deadline := time.Now().Add(10 * time.Second)
	for {
		clock.advance(2 * time.Hour)
		_, sid3 := chat(t, addr, sid, "after two more idle hours")
		if sid3 != sid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("idle reset policy never applied after reload")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestHotReloadDiscordGuildGetsSlashCommands: a guild a reload adds to a
// Discord account's guilds gets the slash commands without a restart; the
// guild it drops has them removed.
func TestHotReloadDiscordGuildGetsSlashCommands(t *testing.T) {
	fake := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true,
		Guilds: []*discordgo.Guild{{ID: "500", Name: "first"}, {ID: "501", Name: "added later"}}})
	defer fake.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	write := func(guilds string) {
		t.Helper()
		yaml := reloadYAML(filepath.Join(dir, "state"), fmt.Sprintf(
			"channels: {discord: {accounts: {default: {token: tok, apiBase: %q, guilds: {%s}}}}}\n", fake.URL(), guilds))
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`"500": {}`)
	startFromFile(t, path, &fakeClock{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if regs, err := fake.WaitRegistrations(ctx, 1); err != nil || regs[0].GuildID != "500" {
		t.Fatalf("registrations at start %+v: %v", regs, err)
	}
	write(`"501": {}`)
	regs, err := fake.WaitRegistrations(ctx, 3)
	if err != nil {
		t.Fatalf("registrations after the reload %+v: %v", regs, err)
	}
	got := map[string]int{}
	for _, r := range regs[1:] {
		got[r.GuildID] = len(r.Commands)
	}
	if want := map[string]int{"501": len(channels.Commands()), "500": 0}; !maps.Equal(got, want) {
		t.Fatalf("after the reload: commands by guild %v, want %v", got, want)
	}
}

// TestHotReloadSymlinkSwaps: a config that is a symlink is reloaded when
// what it points at changes, every time: the Kubernetes ConfigMap volume
// (gateway.yaml -> ..data/gateway.yaml, ..data -> a timestamped directory
// swapped by renaming a new ..data link over it, the old one removed),
// and a link to a file in another directory that an editor saves by
// renaming over it.
func TestHotReloadSymlinkSwaps(t *testing.T) {
	for _, layout := range []string{"configmap", "link elsewhere"} {
		t.Run(layout, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			write := func(mode string) string {
				return reloadYAML(state, "messages: {queue: {mode: "+mode+"}}\n")
			}
			mount := filepath.Join(dir, "mount")
			other := filepath.Join(dir, "elsewhere")
			for _, d := range []string{mount, other} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(mount, "gateway.yaml")
			gen := 0
			var save func(content string) error
			switch layout {
			case "configmap":
				save = func(content string) error { // what the kubelet's atomic writer does
					gen++
					ts := filepath.Join(mount, fmt.Sprintf("..2026_11_30_%02d", gen))
					if err := os.Mkdir(ts, 0o700); err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(ts, "gateway.yaml"), []byte(content), 0o600); err != nil {
						return err
					}
					old, _ := os.Readlink(filepath.Join(mount, "..data"))
					tmp := filepath.Join(mount, "..data_tmp")
					if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
						return err
					}
					if err := os.Rename(tmp, filepath.Join(mount, "..data")); err != nil {
						return err
					}
					if old != "" {
						return os.RemoveAll(filepath.Join(mount, old))
					}
					return nil
				}
				if err := save(write("collect")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join("..data", "gateway.yaml"), path); err != nil {
					t.Fatal(err)
				}
			default:
				target := filepath.Join(other, "gateway.yaml")
				save = func(content string) error { // an editor's rename over
					tmp := target + ".tmp"
					if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
						return err
					}
					return os.Rename(tmp, target)
				}
				if err := save(write("collect")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, path); err != nil {
					t.Fatal(err)
				}
			}
			addr := startFromFile(t, path, &fakeClock{})
			_, sid := chat(t, addr, "", "hello")
			waitStatus(t, addr, sid, "Queue: collect")
			for _, mode := range []string{"followup", "steer", "interrupt"} { // the second and third edits too
				if err := save(write(mode)); err != nil {
					t.Fatal(err)
				}
				waitStatus(t, addr, sid, "Queue: "+mode)
			}
		})
	}
}

// TestHotReloadInvalidEditThenValid: an invalid save (broken YAML, a bad
// value) is rejected with an error naming the file and what is wrong, the
// running config stays, and the next valid save is applied.
func TestHotReloadInvalidEditThenValid(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mode := func(m string) string { return reloadYAML(state, "messages: {queue: {mode: "+m+"}}\n") }
	write(mode("collect"))
	log, logs := observedLogger(t)
	_, addr := startDaemonLogged(t, path, &fakeClock{}, log)
	_, sid := chat(t, addr, "", "hello")
	waitStatus(t, addr, sid, "Queue: collect")
	for i, bad := range []struct{ content, says string }{
		{mode("collect") + "session: {reset: {mode: daily, atHour: 4\n", "yaml"},
		{mode("shout"), "messages.queue.mode"},
	} {
		write(bad.content)
		waitFor(t, func() bool { return logs.FilterMessageSnippet("config reload rejected").Len() > i })
		e := logs.FilterMessageSnippet("config reload rejected").All()[i]
		if e.ContextMap()["path"] != path || !strings.Contains(fmt.Sprint(e.ContextMap()["error"]), bad.says) {
			t.Fatalf("rejection %d logged %v, want the path and %q", i, e.ContextMap(), bad.says)
		}
		waitStatus(t, addr, sid, "Queue: collect")
	}
	write(mode("followup"))
	waitStatus(t, addr, sid, "Queue: followup")
}

// TestHotReloadResetPolicyEditKeepsFreshSessions pins that a reset policy
// edit judges existing sessions by the new policy alone, with nothing
// remembered of the old one: a session fresh under both is kept (idle 60
// -> 120 minutes with 90 idle minutes; a daily hour moved while the
// session started after both boundaries), and one stale under the new
// policy resets at its next message.
func TestHotReloadResetPolicyEditKeepsFreshSessions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	write := func(policy string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(reloadYAML(state, "session: {reset: "+policy+"}\n")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("{mode: idle, idleMinutes: 60}")
	clock := &fakeClock{}
	log, logs := observedLogger(t)
	_, addr := startDaemonLogged(t, path, clock, log)
	_, sid := chat(t, addr, "", "first")
	applied := func(n int) {
		t.Helper()
		waitFor(t, func() bool { return logs.FilterMessage("config reloaded").Len() >= n })
	}

	write("{mode: idle, idleMinutes: 120}")
	applied(1)
	clock.advance(90 * time.Minute) // stale under the old policy, fresh under the new
	if _, got := chat(t, addr, sid, "ninety minutes later"); got != sid {
		t.Fatalf("a session fresh under the new policy was reset: %s -> %s", sid, got)
	}

	// Daily, with the boundary one to two hours ago: the session started
	// three hours ago and resets. The new one started after the boundary
	// and after the one an hour earlier: moving atHour there keeps it.
	clock.advance(90 * time.Minute)
	now := clock.now().In(time.UTC)
	h1, h2 := (now.Hour()+23)%24, (now.Hour()+22)%24
	write(fmt.Sprintf("{mode: daily, atHour: %d, timezone: UTC}", h1))
	applied(2)
	_, sid2 := chat(t, addr, sid, "daily now")
	if sid2 == sid {
		t.Fatalf("a session started before the daily boundary was kept")
	}
	write(fmt.Sprintf("{mode: daily, atHour: %d, timezone: UTC}", h2))
	applied(3)
	if _, got := chat(t, addr, sid2, "boundary moved earlier"); got != sid2 {
		t.Fatalf("a session started after both daily boundaries was reset: %s -> %s", sid2, got)
	}

	write("{mode: idle, idleMinutes: 30}")
	applied(4)
	clock.advance(45 * time.Minute) // stale under the new policy
	if _, got := chat(t, addr, sid2, "forty-five minutes later"); got == sid2 {
		t.Fatal("a session stale under the new policy was kept")
	}
}
