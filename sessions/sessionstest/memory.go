package sessionstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

// MemoryOpener returns a new, empty memory store, or with share (a store
// it returned earlier) a second handle on share's storage, as another
// process would open it. It releases what it opened when t ends.
type MemoryOpener func(t *testing.T, share sessions.Memory) sessions.Memory

// TestMemory runs the conformance suite of sessions.Memory against the
// stores open returns, as parallel subtests.
func TestMemory(t *testing.T, open MemoryOpener) {
	cases := []struct {
		name string
		run  func(t *testing.T, open MemoryOpener)
	}{
		{"EmptyUntilWritten", testMemoryEmpty},
		{"AddUpdateForgetReopen", testMemoryRoundTrip},
		{"ScopesAreApart", testMemoryScopesApart},
		{"LimitsRefuseAndStoreNothing", testMemoryLimits},
		{"ConcurrentAddsNeverPassTheLimit", testMemoryConcurrent},
		{"HostileScopesAndText", testMemoryHostile},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

type memoryFixture struct {
	t   *testing.T
	m   sessions.Memory
	ctx context.Context
}

func newMemoryFixture(t *testing.T, open MemoryOpener) *memoryFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &memoryFixture{t: t, m: open(t, nil), ctx: ctx}
}

var memLim = sessions.MemoryLimits{MaxNotes: 5, MaxNoteBytes: 40}

func (f *memoryFixture) add(m sessions.Memory, s sessions.MemoryScope, text string, min int) sessions.MemoryNote {
	f.t.Helper()
	n, err := m.AddNote(f.ctx, s, text, t0.Add(time.Duration(min)*time.Minute), memLim)
	if err != nil {
		f.t.Fatalf("AddNote(%s, %q): %v", s, text, err)
	}
	return n
}

func (f *memoryFixture) texts(m sessions.Memory, s sessions.MemoryScope) []string {
	f.t.Helper()
	ns, err := m.Notes(f.ctx, s)
	if err != nil {
		f.t.Fatalf("Notes(%s): %v", s, err)
	}
	out := []string{}
	for _, n := range ns {
		out = append(out, fmt.Sprintf("%d:%s", n.ID, n.Text))
	}
	return out
}

func (f *memoryFixture) scopes(m sessions.Memory, agent string) []string {
	f.t.Helper()
	l, err := m.MemoryScopes(f.ctx, agent)
	if err != nil {
		f.t.Fatalf("MemoryScopes(%q): %v", agent, err)
	}
	out := []string{}
	for _, i := range l {
		out = append(out, fmt.Sprintf("%s=%d/%d", i.Scope, i.Notes, i.Bytes))
	}
	return out
}

var (
	agentScope = sessions.MemoryScope{AgentID: "main", Kind: sessions.MemoryAgent}
	aliceScope = sessions.SenderScope("main", "telegram", "42")
	roomScope  = sessions.RoomScope("main", "discord", "900")
)

func testMemoryEmpty(t *testing.T, open MemoryOpener) {
	f := newMemoryFixture(t, open)
	if got := f.texts(f.m, aliceScope); len(got) != 0 {
		t.Errorf("Notes of a new store = %q, want none", got)
	}
	if got := f.scopes(f.m, ""); len(got) != 0 {
		t.Errorf("MemoryScopes of a new store = %q, want none", got)
	}
	if n, err := f.m.ForgetScope(f.ctx, aliceScope); err != nil || n != 0 {
		t.Errorf("ForgetScope of an empty scope = %d, %v; want 0, nil", n, err)
	}
	if err := f.m.ForgetNote(f.ctx, aliceScope, 1); !errors.Is(err, sessions.ErrNoNote) {
		t.Errorf("ForgetNote of an empty scope = %v, want ErrNoNote", err)
	}
}

func testMemoryRoundTrip(t *testing.T, open MemoryOpener) {
	f := newMemoryFixture(t, open)
	n1 := f.add(f.m, aliceScope, "prefers metric units", 1)
	f.add(f.m, aliceScope, "lives in Lyon", 2)
	f.add(f.m, aliceScope, "has a cat called Miso", 3)
	want := sessions.MemoryNote{ID: 1, Text: "prefers metric units", CreatedAt: t0.Add(time.Minute), UpdatedAt: t0.Add(time.Minute)}
	if diff := cmp.Diff(want, n1); diff != "" {
		t.Errorf("AddNote returned (-want +got):\n%s", diff)
	}
	// Another handle (a restart, another process) reads the same.
	other := open(t, f.m)
	if diff := cmp.Diff([]string{"1:prefers metric units", "2:lives in Lyon", "3:has a cat called Miso"}, f.texts(other, aliceScope)); diff != "" {
		t.Errorf("Notes through a second handle (-want +got):\n%s", diff)
	}
	up, err := other.UpdateNote(f.ctx, aliceScope, 2, "moved to Grenoble", t0.Add(10*time.Minute), memLim)
	if err != nil {
		t.Fatalf("UpdateNote: %v", err)
	}
	if up.ID != 2 || up.Text != "moved to Grenoble" || !up.CreatedAt.Equal(t0.Add(2*time.Minute)) || !up.UpdatedAt.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("UpdateNote returned %+v", up)
	}
	if err := f.m.ForgetNote(f.ctx, aliceScope, 3); err != nil {
		t.Fatalf("ForgetNote: %v", err)
	}
	// A forgotten number is not given again while the scope holds notes.
	if n := f.add(other, aliceScope, "speaks French", 11); n.ID != 4 {
		t.Errorf("the note after forgetting note 3 got id %d, want 4", n.ID)
	}
	if diff := cmp.Diff([]string{"1:prefers metric units", "2:moved to Grenoble", "4:speaks French"}, f.texts(open(t, f.m), aliceScope)); diff != "" {
		t.Errorf("Notes after update and forget (-want +got):\n%s", diff)
	}
	for what, err := range map[string]error{
		"UpdateNote of a forgotten note": func() error {
			_, err := f.m.UpdateNote(f.ctx, aliceScope, 3, "x", t0, memLim)
			return err
		}(),
		"ForgetNote of a forgotten note": f.m.ForgetNote(f.ctx, aliceScope, 3),
		"UpdateNote of another scope's note": func() error {
			_, err := f.m.UpdateNote(f.ctx, agentScope, 1, "x", t0, memLim)
			return err
		}(),
	} {
		if !errors.Is(err, sessions.ErrNoNote) {
			t.Errorf("%s = %v, want ErrNoNote", what, err)
		}
	}
	if n, err := other.ForgetScope(f.ctx, aliceScope); err != nil || n != 3 {
		t.Errorf("ForgetScope = %d, %v; want 3", n, err)
	}
	if got := f.texts(f.m, aliceScope); len(got) != 0 {
		t.Errorf("Notes after ForgetScope = %q, want none", got)
	}
	if got := f.scopes(f.m, ""); len(got) != 0 {
		t.Errorf("MemoryScopes after ForgetScope = %q, want none", got)
	}
}

func testMemoryScopesApart(t *testing.T, open MemoryOpener) {
	f := newMemoryFixture(t, open)
	bob := sessions.SenderScope("main", "telegram", "43")
	aliceOther := sessions.SenderScope("ops", "telegram", "42")
	f.add(f.m, agentScope, "the team ships on Fridays", 1)
	f.add(f.m, aliceScope, "alice: vegetarian", 2)
	f.add(f.m, bob, "bob: on call", 3)
	f.add(f.m, roomScope, "room: standup at 9", 4)
	f.add(f.m, aliceOther, "ops agent's alice note", 5)
	f.add(f.m, aliceScope, "alice: likes tea", 6)
	for s, want := range map[sessions.MemoryScope][]string{
		agentScope: {"1:the team ships on Fridays"}, aliceScope: {"1:alice: vegetarian", "2:alice: likes tea"},
		bob: {"1:bob: on call"}, roomScope: {"1:room: standup at 9"}, aliceOther: {"1:ops agent's alice note"},
	} {
		if diff := cmp.Diff(want, f.texts(f.m, s)); diff != "" {
			t.Errorf("Notes(%s) (-want +got):\n%s", s, diff)
		}
	}
	want := []string{"main/agent=1/25", "main/room/discord:900=1/18", "main/sender/telegram:42=2/33", "main/sender/telegram:43=1/12"}
	if diff := cmp.Diff(want, f.scopes(open(t, f.m), "main")); diff != "" {
		t.Errorf("MemoryScopes(main) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(append([]string{"main/agent=1/25"}, append(want[1:], "ops/sender/telegram:42=1/22")...), f.scopes(f.m, "")); diff != "" {
		t.Errorf("MemoryScopes(all) (-want +got):\n%s", diff)
	}
	// Forgetting one person leaves the others.
	if n, err := f.m.ForgetScope(f.ctx, aliceScope); err != nil || n != 2 {
		t.Fatalf("ForgetScope(alice) = %d, %v", n, err)
	}
	if got := f.texts(f.m, bob); len(got) != 1 {
		t.Errorf("bob's notes after forgetting alice: %q", got)
	}
	if got := f.texts(f.m, aliceOther); len(got) != 1 {
		t.Errorf("the ops agent's note on alice after main forgot her: %q", got)
	}
}

func testMemoryLimits(t *testing.T, open MemoryOpener) {
	f := newMemoryFixture(t, open)
	for i := range memLim.MaxNotes {
		f.add(f.m, aliceScope, fmt.Sprint("note ", i), i)
	}
	_, err := f.m.AddNote(f.ctx, aliceScope, "one too many", t0, memLim)
	var full *sessions.MemoryFullError
	if !errors.As(err, &full) || full.Max != memLim.MaxNotes || !strings.Contains(err.Error(), "5 notes") {
		t.Errorf("AddNote past the limit = %v, want a MemoryFullError naming the limit of 5", err)
	}
	long := strings.Repeat("é", memLim.MaxNoteBytes/2+1) // 42 bytes
	var tooLong *sessions.NoteTooLongError
	if _, err := f.m.AddNote(f.ctx, roomScope, long, t0, memLim); !errors.As(err, &tooLong) || tooLong.Bytes != 42 || tooLong.Max != 40 {
		t.Errorf("AddNote of 42 bytes = %v, want a NoteTooLongError (42 > 40)", err)
	}
	if _, err := f.m.UpdateNote(f.ctx, aliceScope, 1, long, t0, memLim); !errors.As(err, &tooLong) {
		t.Errorf("UpdateNote to 42 bytes = %v, want a NoteTooLongError", err)
	}
	for _, bad := range []string{"", "  \n", "a\x00b", "\xff\xfe"} {
		if _, err := f.m.AddNote(f.ctx, roomScope, bad, t0, memLim); err == nil {
			t.Errorf("AddNote(%q) stored a bad note", bad)
		}
	}
	if _, err := f.m.AddNote(f.ctx, roomScope, "ok", t0, sessions.MemoryLimits{MaxNotes: sessions.MaxMemoryNotes + 1}); err == nil ||
		!strings.Contains(err.Error(), "maxNotes") {
		t.Errorf("AddNote with limits past the bounds = %v, want an error naming maxNotes", err)
	}
	// Exactly at the byte limit is fine; nothing refused was stored.
	f.add(f.m, roomScope, strings.Repeat("x", memLim.MaxNoteBytes), 1)
	if got := f.texts(open(t, f.m), roomScope); len(got) != 1 {
		t.Errorf("room notes = %q, want only the 40-byte one", got)
	}
	if got := f.texts(f.m, aliceScope); len(got) != memLim.MaxNotes || got[0] != "1:note 0" {
		t.Errorf("alice's notes after refused writes = %q", got)
	}
	// A lower limit than the notes held refuses adds but keeps the notes.
	if _, err := f.m.AddNote(f.ctx, aliceScope, "x", t0, sessions.MemoryLimits{MaxNotes: 2, MaxNoteBytes: 40}); !errors.As(err, &full) {
		t.Errorf("AddNote under a lowered limit = %v, want MemoryFullError", err)
	}
}

// testMemoryConcurrent: 20 goroutines on two handles (two processes) add
// to one scope limited to 10 notes: exactly 10 are stored, with distinct
// ids, and the other 10 are refused as full.
func testMemoryConcurrent(t *testing.T, open MemoryOpener) {
	f := newMemoryFixture(t, open)
	handles := []sessions.Memory{f.m, open(t, f.m)}
	lim := sessions.MemoryLimits{MaxNotes: 10, MaxNoteBytes: 100}
	var ok, full atomic.Int32
	parallel(goroutines, func(i int) {
		_, err := handles[i%2].AddNote(f.ctx, aliceScope, fmt.Sprint("note ", i), t0, lim)
		var fe *sessions.MemoryFullError
		switch {
		case err == nil:
			ok.Add(1)
		case errors.As(err, &fe):
			full.Add(1)
		default:
			t.Error(err)
		}
	})
	ns, err := f.m.Notes(f.ctx, aliceScope)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int64]bool{}
	for _, n := range ns {
		ids[n.ID] = true
	}
	if ok.Load() != 10 || full.Load() != 10 || len(ns) != 10 || len(ids) != 10 {
		t.Errorf("%d added, %d refused, %d stored with %d distinct ids; want 10, 10, 10, 10", ok.Load(), full.Load(), len(ns), len(ids))
	}
}

func testMemoryHostile(t *testing.T, open MemoryOpener) {
	f := newMemoryFixture(t, open)
	bad := []sessions.MemoryScope{
		{AgentID: "", Kind: sessions.MemoryAgent}, {AgentID: "../x", Kind: sessions.MemoryAgent},
		{AgentID: "main", Kind: "people", ID: "x"}, {AgentID: "main", Kind: sessions.MemoryAgent, ID: "x"},
		{AgentID: "main", Kind: sessions.MemorySender}, {AgentID: "main", Kind: sessions.MemorySender, ID: "a\x00b"},
		{AgentID: "main", Kind: sessions.MemoryRoom, ID: "\xff"}, {AgentID: "main", Kind: sessions.MemoryRoom, ID: strings.Repeat("r", 257)},
	}
	for _, s := range bad {
		if _, err := f.m.AddNote(f.ctx, s, "x", t0, memLim); err == nil {
			t.Errorf("AddNote(%+v) accepted a bad scope", s)
		}
		if _, err := f.m.Notes(f.ctx, s); err == nil {
			t.Errorf("Notes(%+v) accepted a bad scope", s)
		}
		if _, err := f.m.ForgetScope(f.ctx, s); err == nil {
			t.Errorf("ForgetScope(%+v) accepted a bad scope", s)
		}
	}
	// Odd but valid ids and text are kept exactly and apart.
	odd := []string{"telegram:../../etc/passwd", "web:'; DROP TABLE memory_notes; --", `discord:a\b`, "telegram:日本語", "x:" + strings.Repeat("r", 254)}
	for i, id := range odd {
		s := sessions.MemoryScope{AgentID: "main", Kind: sessions.MemorySender, ID: id}
		f.add(f.m, s, id[:min(len(id), 40)], i)
	}
	other := open(t, f.m)
	for _, id := range odd {
		s := sessions.MemoryScope{AgentID: "main", Kind: sessions.MemorySender, ID: id}
		if diff := cmp.Diff([]string{"1:" + id[:min(len(id), 40)]}, f.texts(other, s)); diff != "" {
			t.Errorf("Notes(%q) (-want +got):\n%s", id, diff)
		}
	}
	if got := f.scopes(other, "main"); len(got) != len(odd) {
		t.Errorf("MemoryScopes = %q, want %d scopes", got, len(odd))
	}
}

// BenchMemoryRead measures what a turn pays to read its memory: the
// notes of the agent, sender and room scopes, each holding notes notes of
// about 200 bytes.
func BenchMemoryRead(b *testing.B, m sessions.Memory, notes int) {
	ctx := context.Background()
	scopes := []sessions.MemoryScope{agentScope, aliceScope, roomScope}
	lim := sessions.MemoryLimits{MaxNotes: sessions.MaxMemoryNotes, MaxNoteBytes: 500}
	for _, s := range scopes {
		for i := range notes {
			if _, err := m.AddNote(ctx, s, fmt.Sprintf("note %d: %s", i, strings.Repeat("lorem ipsum ", 16)), t0, lim); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, s := range scopes {
			ns, err := m.Notes(ctx, s)
			if err != nil || len(ns) != notes {
				b.Fatalf("Notes(%s) = %d notes, %v", s, len(ns), err)
			}
		}
	}
}
