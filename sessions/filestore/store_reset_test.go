package filestore

import (
	"context"
	"errors"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

func idleConfig(minutes int) sessions.ResetConfig {
	return sessions.ResetConfig{Reset: sessions.ResetPolicy{Mode: sessions.ResetIdle, IdleMinutes: &minutes}}
}

func appendText(t *testing.T, s *Store, id, text string) {
	t.Helper()
	tr, err := s.Transcript(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(context.Background(), sessions.UserText(text, time.Now())); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func historyTexts(t *testing.T, path string) []string {
	t.Helper()
	msgs, err := transcript.ReadHistory(path)
	if err != nil {
		t.Fatalf("ReadHistory(%s): %v", path, err)
	}
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text())
	}
	return out
}

var archiveNameRe = regexp.MustCompile(`^[0-9a-f-]{36}\.jsonl\.(reset|deleted)\.\d{8}T\d{6}Z$`)

func TestTimedResetOnBegin(t *testing.T) {
	verifyNoLeaks(t)
	clk := newFakeClock(time.Date(2026, 11, 22, 7, 39, 0, 0, time.UTC))
	m := openTestManager(t, "", Options{Now: clk.Now, Reset: idleConfig(10)})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "7")
	e0, _ := mustBegin(t, s, k, sessions.Origin{Channel: "telegram", To: "7", Name: "Bo", Title: "first"})
	appendText(t, s, e0.SessionID, "hello")
	if _, err := s.Patch(context.Background(), k, func(e *sessions.Entry) error {
		e.Label, e.ModelOverride, e.QueueMode, e.CompactionCount = "lbl", "big-model", "steer", 3
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.AddCounters(k, sessions.Counters{TotalTokens: 50, Messages: 1})

	clk.Advance(9 * time.Minute) // fresh: Begin keeps the session and moves lastInteractionAt
	if e, info := mustBegin(t, s, k, sessions.Origin{Channel: "telegram"}); info.ResetReason != "" || e.SessionID != e0.SessionID {
		t.Fatalf("fresh session rolled over: %+v", info)
	}
	clk.Advance(5 * time.Minute)
	if e, info := mustBegin(t, s, k, sessions.Origin{}); info.ResetReason != "" || e.SessionID != e0.SessionID {
		t.Fatalf("idle counted from the first message, not the last: %+v", info)
	}
	clk.Advance(11 * time.Minute)
	e1, info := mustBegin(t, s, k, sessions.Origin{Channel: "telegram", Title: "new start"})
	if info.ResetReason != sessions.ReasonIdle || info.Previous != e0.SessionID || e1.SessionID == e0.SessionID {
		t.Fatalf("info = %+v", info)
	}
	if e1.Label != "lbl" || e1.DisplayName != "Bo" || e1.LastTo != "7" {
		t.Errorf("kept fields lost: %+v", e1)
	}
	if e1.ModelOverride != "" || e1.QueueMode != "" || e1.CompactionCount != 0 || e1.TotalTokens != 0 || e1.MessageCount != 0 {
		t.Errorf("timed reset kept overrides or counters: %+v", e1)
	}
	if e1.Title != "new start" || !e1.SessionStartedAt.Equal(clk.Now()) {
		t.Errorf("title %q startedAt %v", e1.Title, e1.SessionStartedAt)
	}
	arch := filepath.Join(s.Dir(), e0.SessionID+".jsonl.reset.20261122T080400Z")
	if got := historyTexts(t, arch); len(got) != 1 || got[0] != "hello" {
		t.Errorf("archived transcript holds %q", got)
	}
	if fileExists(filepath.Join(s.Dir(), e0.SessionID+".jsonl")) {
		t.Error("old transcript still in place")
	}
	disk := readIndexFile(t, s)
	if disk[k.String()].SessionID != e1.SessionID {
		t.Error("reset not durable when Begin returned")
	}
	list, err := s.Archived(k)
	if err != nil || len(list) != 1 || list[0].SessionID != e0.SessionID || list[0].Reason != sessions.ReasonIdle || list[0].Title != "first" {
		t.Errorf("Archived = %+v, %v", list, err)
	}
	if !archiveNameRe.MatchString(list[0].File) {
		t.Errorf("archive name %q", list[0].File)
	}
}

func TestResetPolicyHotSwap(t *testing.T) {
	clk := newFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	m := openTestManager(t, "", Options{Now: clk.Now})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "1")
	mustBegin(t, s, k, sessions.Origin{})
	clk.Advance(48 * time.Hour)
	if _, info := mustBegin(t, s, k, sessions.Origin{}); info.ResetReason != "" {
		t.Fatalf("default policy (off) reset a session")
	}
	m.SetReset(idleConfig(60))
	clk.Advance(2 * time.Hour)
	if _, info := mustBegin(t, s, k, sessions.Origin{}); info.ResetReason != sessions.ReasonIdle {
		t.Fatalf("swapped policy not used: %+v", info)
	}
}

func TestManualResetKeepsOverrides(t *testing.T) {
	verifyNoLeaks(t)
	m := openTestManager(t, "", Options{})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "7")
	e0, _ := mustBegin(t, s, k, sessions.Origin{})
	if _, err := s.Patch(context.Background(), k, func(e *sessions.Entry) error {
		e.ModelOverride, e.QueueMode, e.QueueCap = "m1", "followup", 5
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e1, err := s.Reset(context.Background(), k, sessions.ResetOptions{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	if e1.SessionID == e0.SessionID || e1.ModelOverride != "m1" || e1.QueueMode != "followup" || e1.QueueCap != 5 {
		t.Errorf("manual reset: %+v", e1)
	}
	e2, err := s.Reset(context.Background(), k, sessions.ResetOptions{Manual: true, Model: "m2"})
	if err != nil || e2.ModelOverride != "m2" {
		t.Errorf("/new m2: %+v %v", e2, err)
	}
	list, _ := s.Archived(k)
	if len(list) != 2 || list[0].SessionID != e1.SessionID || list[1].SessionID != e0.SessionID || list[0].Reason != "manual" {
		t.Errorf("archived = %+v", list)
	}
	// Reset of a key without a session creates one.
	e3, err := s.Reset(context.Background(), dmKey(t, "main", "new"), sessions.ResetOptions{Manual: true, Model: "m3"})
	if err != nil || e3.ModelOverride != "m3" || e3.SessionID == "" {
		t.Errorf("reset of unknown key: %+v %v", e3, err)
	}
}

func TestDeleteAndSwitch(t *testing.T) {
	verifyNoLeaks(t)
	m := openTestManager(t, "", Options{})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "7")
	ctx := context.Background()
	e0, _ := mustBegin(t, s, k, sessions.Origin{Title: "one"})
	appendText(t, s, e0.SessionID, "in one")
	lockPath := filepath.Join(s.Dir(), e0.SessionID+".jsonl.lock")
	if !fileExists(lockPath) {
		t.Fatal("transcript lock file not created by Append")
	}
	if err := s.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(k); ok {
		t.Fatal("entry still present after Delete")
	}
	if fileExists(lockPath) {
		t.Error("lock file not removed with its session")
	}
	if err := s.Delete(ctx, k); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("second Delete: %v", err)
	}
	e1, info := mustBegin(t, s, k, sessions.Origin{Title: "two"})
	if !info.Created {
		t.Fatal("Begin after Delete did not create")
	}
	appendText(t, s, e1.SessionID, "in two")
	list, err := s.Archived(k)
	if err != nil || len(list) != 1 || !list[0].Deleted || list[0].SessionID != e0.SessionID {
		t.Fatalf("Archived = %+v %v", list, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), list[0].File)); err != nil {
		t.Fatalf("deleted transcript not kept: %v", err)
	}
	back, err := s.Switch(ctx, k, e0.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if back.SessionID != e0.SessionID || back.Title != "one" {
		t.Errorf("switched entry %+v", back)
	}
	if got := historyTexts(t, filepath.Join(s.Dir(), e0.SessionID+".jsonl")); len(got) != 1 || got[0] != "in one" {
		t.Errorf("restored transcript %q", got)
	}
	appendText(t, s, e0.SessionID, "more in one")
	list, _ = s.Archived(k)
	if len(list) != 1 || list[0].SessionID != e1.SessionID || list[0].Reason != "switch" {
		t.Errorf("after switch archived = %+v", list)
	}
	if _, err := s.Switch(ctx, k, "00000000-0000-0000-0000-000000000000"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("switch to unknown: %v", err)
	}
	if _, err := s.Switch(ctx, k, "../../x"); err == nil {
		t.Error("switch to a hostile id accepted")
	}
	// Switching back again restores session two's transcript.
	if _, err := s.Switch(ctx, k, e1.SessionID); err != nil {
		t.Fatal(err)
	}
	if got := historyTexts(t, filepath.Join(s.Dir(), e1.SessionID+".jsonl")); len(got) != 1 || got[0] != "in two" {
		t.Errorf("restored transcript two %q", got)
	}
}
