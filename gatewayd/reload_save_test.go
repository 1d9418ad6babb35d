package gatewayd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestReloadTruncatedFileKeepsRunningConfig: a save that truncates the
// file before writing it (a shell redirect whose command is still
// producing the config, an editor writing in place) leaves the file empty,
// or holding only its leading comments, for as long as the writer takes.
// A reload that reads it then must not apply the defaults over the running
// config (the Telegram account gone, so nobody admitted and the queued
// message dropped): it is rejected as empty, the running config stays,
// and the queued message is answered.
func TestReloadTruncatedFileKeepsRunningConfig(t *testing.T) {
	for _, tc := range []struct{ name, partial string }{
		{"empty", ""},
		{"only its header comments", "# gateway config, deployed by ops\n# do not edit by hand\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := telegramtest.Start(t, telegramtest.Options{})
			model, release := longTurnModel(t)
			dir := t.TempDir()
			path := filepath.Join(dir, "gateway.yaml")
			full := accessReloadYAML(filepath.Join(dir, "state"), tg, model, `{requireMention: false, allowFrom: ["100"]}`)
			if err := os.WriteFile(path, []byte(full), 0o600); err != nil {
				t.Fatal(err)
			}
			log, logs := observedLogger(t)
			d, _ := startDaemonLogged(t, path, &fakeClock{}, log)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			queueBehindLongTurn(ctx, t, tg, model, "queued question")

			if err := os.WriteFile(path, []byte(tc.partial), 0o600); err != nil { // the writer stalls here
				t.Fatal(err)
			}
			waitFor(t, func() bool { return logs.FilterMessageSnippet("config reload").Len() > 0 })
			if n := logs.FilterMessage("config reloaded").Len(); n > 0 {
				t.Fatalf("the truncated file was applied (%d reloads)", n)
			}
			rej := logs.FilterMessageSnippet("config reload rejected").All()
			if len(rej) != 1 || !strings.Contains(fmt.Sprint(rej[0].ContextMap()["error"]), "empty") {
				t.Fatalf("rejections %v, want one saying the file is empty", rej)
			}
			d.mu.Lock()
			_, ok := d.cfg.Channels.Telegram.Accounts["default"]
			d.mu.Unlock()
			if !ok {
				t.Fatal("the running config lost its Telegram account")
			}
			close(release)
			sent, err := tg.WaitSent(ctx, 2)
			if err != nil {
				t.Fatalf("the running turn's answer and the queued one's: %v", err)
			}
			if !strings.Contains(sent[1].Text, "queued question") {
				t.Fatalf("second reply %q, want the queued message answered", sent[1].Text)
			}
			if logs.FilterMessageSnippet("no longer admits").Len() > 0 {
				t.Fatal("a queued message was dropped as no longer admitted")
			}
		})
	}
}

// TestHotReloadConfigDirectoryReplaced: a deployment that replaces the
// config's whole directory (moves the old one aside or deletes it, then
// creates the new one) keeps hot reload working: the file in the new
// directory is read, and later edits to it are too. (The watch on the
// old directory ends with it; nothing was read again until a restart.)
func TestHotReloadConfigDirectoryReplaced(t *testing.T) {
	for _, style := range []string{"moved aside", "deleted"} {
		t.Run(style, func(t *testing.T) {
			dir := t.TempDir()
			etc := filepath.Join(dir, "etc")
			path := filepath.Join(etc, "gateway.yaml")
			state := filepath.Join(dir, "state")
			mode := func(m string) []byte { return []byte(reloadYAML(state, "messages: {queue: {mode: "+m+"}}\n")) }
			if err := os.Mkdir(etc, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, mode("collect"), 0o600); err != nil {
				t.Fatal(err)
			}
			addr := startFromFile(t, path, &fakeClock{})
			_, sid := chat(t, addr, "", "hello")
			waitStatus(t, addr, sid, "Queue: collect")

			var err error
			if style == "moved aside" {
				err = os.Rename(etc, etc+".old")
			} else {
				err = os.RemoveAll(etc)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(etc, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, mode("followup"), 0o600); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, addr, sid, "Queue: followup")
			if err := os.WriteFile(path, mode("steer"), 0o600); err != nil { // an edit in the new directory
				t.Fatal(err)
			}
			waitStatus(t, addr, sid, "Queue: steer")
		})
	}
}

// TestHotReloadSymlinkedDirectorySwapped: a config under a symlinked
// directory that a deployment swaps (a release layout: current ->
// releases/2, the link replaced by renaming a new one over it) is read
// again when the link moves, and edits in the new release are read too.
// (Only the file's directory was watched, through the link: the old
// release's, forever.)
func TestHotReloadSymlinkedDirectorySwapped(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	mode := func(m string) []byte { return []byte(reloadYAML(state, "messages: {queue: {mode: "+m+"}}\n")) }
	release := func(n int, m string) {
		t.Helper()
		rel := filepath.Join(dir, "releases", fmt.Sprint(n))
		if err := os.MkdirAll(rel, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rel, "gateway.yaml"), mode(m), 0o600); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "current.tmp")
		if err := os.Symlink(filepath.Join("releases", fmt.Sprint(n)), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "current")); err != nil { // ln -sfn's swap
			t.Fatal(err)
		}
	}
	release(1, "collect")
	path := filepath.Join(dir, "current", "gateway.yaml")
	addr := startFromFile(t, path, &fakeClock{})
	_, sid := chat(t, addr, "", "hello")
	waitStatus(t, addr, sid, "Queue: collect")

	release(2, "followup")
	waitStatus(t, addr, sid, "Queue: followup")
	if err := os.WriteFile(path, mode("steer"), 0o600); err != nil { // edited in the new release
		t.Fatal(err)
	}
	waitStatus(t, addr, sid, "Queue: steer")
	release(3, "interrupt")
	waitStatus(t, addr, sid, "Queue: interrupt")
}

// TestEmptyConfigFileRunsWithoutRejections: a daemon started on an empty
// config file (the defaults, set through GATEWAY_* variables) has nothing
// to reject when that file is looked at again (the watch's first look, a
// SIGHUP): the empty file is what runs, unchanged; only an empty file
// replacing settings is refused.
func TestEmptyConfigFileRunsWithoutRejections(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GATEWAY_STATE_DIR", filepath.Join(dir, "state"))
	t.Setenv("GATEWAY_HTTP_LISTEN", "127.0.0.1:0")
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	log, logs := observedLogger(t)
	_, addr := startDaemonLogged(t, path, &fakeClock{}, log)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	count := func(result string) bool {
		return strings.Contains(scrape(t, addr), `gateway_config_reloads_total{result="`+result+`"} 1`)
	}
	waitFor(t, func() bool { return count("unchanged") || count("rejected") })
	if rej := logs.FilterMessageSnippet("config reload rejected").All(); len(rej) > 0 {
		t.Fatalf("the empty file the daemon runs was rejected: %v", rej[0].ContextMap())
	}
}

// TestHotReloadStormEndsOnLastSave pins that a burst of saves (a script
// rewriting the file, a sync tool, invalid and empty states between)
// ends with the last save in force.
func TestHotReloadStormEndsOnLastSave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	mode := func(m string) []byte { return []byte(reloadYAML(state, "messages: {queue: {mode: "+m+"}}\n")) }
	if err := os.WriteFile(path, mode("collect"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startFromFile(t, path, &fakeClock{})
	_, sid := chat(t, addr, "", "hello")
	saves := [][]byte{mode("followup"), nil, mode("shout"), []byte("{{{"), mode("steer")}
	for i := range 60 {
		if err := os.WriteFile(path, saves[i%len(saves)], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, mode("interrupt"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, addr, sid, "Queue: interrupt")
}

// TestReloadEditOfEnvOverriddenKeyIsTold: an edit of a key that a
// GATEWAY_* variable overrides changes nothing (the environment's value
// applies): the reload says so, naming the key and the variable, instead
// of saying nothing while the edit is not in force.
func TestReloadEditOfEnvOverriddenKeyIsTold(t *testing.T) {
	t.Setenv("GATEWAY_MESSAGES_QUEUE_MODE", "collect")
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	mode := func(m string) []byte { return []byte(reloadYAML(state, "messages: {queue: {mode: "+m+"}}\n")) }
	if err := os.WriteFile(path, mode("collect"), 0o600); err != nil {
		t.Fatal(err)
	}
	log, logs := observedLogger(t)
	_, addr := startDaemonLogged(t, path, &fakeClock{}, log)
	_, sid := chat(t, addr, "", "hello")
	told := func() int {
		n := 0
		for _, e := range logs.FilterMessage("config notice").All() {
			s := fmt.Sprint(e.ContextMap()["notice"])
			if strings.Contains(s, "messages.queue.mode") && strings.Contains(s, "GATEWAY_MESSAGES_QUEUE_MODE") {
				n++
			}
		}
		return n
	}
	atStart := told() // the start's notices name it too
	if err := os.WriteFile(path, mode("steer"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return told() > atStart })
	waitStatus(t, addr, sid, "Queue: collect")
}

// TestReloadStartOnlyKeysNamedAsNeedingRestart: keys read once at start
// (messages.delivery by the dispatcher, session.lockTimeout by the
// backend and the pairing store) are named as needing a restart when an
// edit changes them, as stateDir or providers are; they were taken in
// silence ("config reloaded") and never applied.
func TestReloadStartOnlyKeysNamedAsNeedingRestart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte(reloadYAML(state, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	log, logs := observedLogger(t)
	startDaemonLogged(t, path, &fakeClock{}, log)
	edit := "messages: {delivery: {maxFailures: 7}}\nsession: {lockTimeout: 30s}\n"
	if err := os.WriteFile(path, []byte(reloadYAML(state, edit)), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return logs.FilterMessage("config reloaded").Len() > 0 })
	var keys []string
	for _, e := range logs.FilterMessageSnippet("needs a restart").All() {
		keys = append(keys, fmt.Sprint(e.ContextMap()["key"]))
	}
	for _, want := range []string{"messages.delivery", "session.lockTimeout"} {
		if !slices.Contains(keys, want) {
			t.Errorf("restart warnings %v lack %s", keys, want)
		}
	}
}

// A key that needs a restart is judged against the value the daemon runs
// with, not the last file applied: after a reload changed it, a later
// unrelated edit says again that it waits for a restart (it still does),
// and an edit back to the running value says nothing of it;
// gateway_config_restart_pending counts the keys waiting.
func TestReloadRestartWarningsAgainstTheRunningValue(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte(reloadYAML(state, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	log, logs := observedLogger(t)
	_, addr := startDaemonLogged(t, path, &fakeClock{}, log)
	step := func(edit string) (warned []string) {
		t.Helper()
		before := logs.FilterMessage("config reloaded").Len()
		skip := len(logs.FilterMessageSnippet("needs a restart").All())
		if err := os.WriteFile(path, []byte(reloadYAML(state, edit)), 0o600); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return logs.FilterMessage("config reloaded").Len() > before })
		for _, e := range logs.FilterMessageSnippet("needs a restart").All()[skip:] {
			warned = append(warned, fmt.Sprint(e.ContextMap()["key"]))
		}
		return warned
	}
	pending := func() string {
		for _, l := range strings.Split(scrape(t, addr), "\n") {
			if strings.HasPrefix(l, "gateway_config_restart_pending ") {
				return strings.TrimPrefix(l, "gateway_config_restart_pending ")
			}
		}
		return "absent"
	}
	if got := step("session: {lockTimeout: 30s}\n"); !slices.Equal(got, []string{"session.lockTimeout"}) {
		t.Errorf("lockTimeout changed: warnings %v, want session.lockTimeout", got)
	}
	if p := pending(); p != "1" {
		t.Errorf("gateway_config_restart_pending = %s after the change, want 1", p)
	}
	if got := step("session: {lockTimeout: 30s}\nmessages: {queue: {mode: steer}}\n"); !slices.Equal(got, []string{"session.lockTimeout"}) {
		t.Errorf("an unrelated edit after it: warnings %v, want session.lockTimeout again (it still waits)", got)
	}
	if got := step("messages: {queue: {mode: steer}}\n"); len(got) != 0 {
		t.Errorf("lockTimeout edited back to its running value: warnings %v, want none", got)
	}
	if p := pending(); p != "0" {
		t.Errorf("gateway_config_restart_pending = %s after the revert, want 0", p)
	}
}
