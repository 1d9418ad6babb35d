package sessionstest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// origin is a message from Ann in a Telegram group.
func origin(title string) sessions.Origin {
	return sessions.Origin{Channel: "telegram", ChatType: "group", AccountID: "bot1", To: "-100", ThreadID: "7",
		From: "u1", Name: "Ann", Title: title}
}

func testCreate(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k := f.key("g1")
	e, info := f.begin(k, origin("  hello \n  world  "))
	if !info.Created || info.ResetReason != "" || info.Previous != "" {
		t.Errorf("BeginInfo %+v, want Created only", info)
	}
	if u, err := uuid.Parse(e.SessionID); err != nil || u.String() != e.SessionID {
		t.Errorf("session id %q is not a canonical UUID", e.SessionID)
	}
	want := sessions.Entry{
		SessionKey: k.String(), SessionID: e.SessionID,
		CreatedAt: t0, SessionStartedAt: t0, LastInteractionAt: t0, UpdatedAt: t0,
		Title: "hello world", Channel: "telegram", ChatType: "group", LastChannel: "telegram", LastTo: "-100",
		LastAccountID: "bot1", LastThreadID: "7", LastFrom: "u1", DisplayName: "Ann",
	}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("created entry (-want +got):\n%s", diff)
	}
	f.same("Begin", e)
	if a := f.archived(k); len(a) != 0 {
		t.Errorf("Archived of a new key = %v, want none", ids(a))
	}
	// A subagent key records who spawned it.
	sub, err := routing.SubagentKey(f.idx.AgentID(), "helper-1")
	if err != nil {
		t.Fatal(err)
	}
	se, _ := f.begin(sub, sessions.Origin{ParentKey: k.String(), Internal: true})
	if se.SpawnedBy != k.String() || se.ParentSessionKey != k.String() {
		t.Errorf("subagent entry spawnedBy %q parent %q, want %q", se.SpawnedBy, se.ParentSessionKey, k)
	}
	f.same("Begin subagent", se)
}

func testTouch(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k := f.key("g1")
	first, _ := f.begin(k, origin("first"))
	f.clk.Advance(time.Minute)
	t1 := f.clk.Now()
	o := sessions.Origin{Channel: "telegram", ChatType: "direct", From: "u2", Name: "Bob", To: "-200", Title: "second"}
	e, info := f.begin(k, o)
	if info != (sessions.BeginInfo{}) {
		t.Errorf("BeginInfo %+v on a fresh session, want zero", info)
	}
	want := first
	want.LastInteractionAt, want.UpdatedAt = t1, t1
	// The last sender, chat and thread follow the message; the first
	// channel, chat type and title stay.
	want.LastFrom, want.DisplayName, want.LastTo, want.LastThreadID = "u2", "Bob", "-200", ""
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("touched entry (-want +got):\n%s", diff)
	}
	f.same("Begin touch", e)

	// Internal work (a subagent's announcement) moves updatedAt only.
	f.clk.Advance(time.Minute)
	e, _ = f.begin(k, sessions.Origin{Internal: true})
	if !e.LastInteractionAt.Equal(t1) || !e.UpdatedAt.Equal(f.clk.Now()) {
		t.Errorf("internal Begin: lastInteractionAt %v updatedAt %v, want %v and %v", e.LastInteractionAt, e.UpdatedAt, t1, f.clk.Now())
	}
	f.same("Begin internal", e)
	// An older message time never moves the idle clock back.
	e, _ = f.begin(k, sessions.Origin{At: t0})
	if !e.LastInteractionAt.Equal(t1) {
		t.Errorf("Begin with an older At moved lastInteractionAt to %v, want %v", e.LastInteractionAt, t1)
	}
	if l, err := f.idx.List(); err != nil || len(l) != 1 {
		t.Errorf("List after touches: %d entries, %v; want 1", len(l), err)
	}
}

func testForeignKey(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	other, err := routing.PeerKey(f.idx.AgentID()+"-other", "telegram", "", routing.Group, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.idx.Begin(f.ctx, other, origin("x")); err == nil {
		t.Error("Begin of another agent's key succeeded")
	}
	if _, _, err := f.idx.Get(other); err == nil {
		t.Error("Get of another agent's key succeeded")
	}
	if _, _, err := f.idx.Begin(f.ctx, routing.Key{}, origin("x")); err == nil {
		t.Error("Begin of the zero key succeeded")
	}
	if l, err := f.idx.List(); err != nil || len(l) != 0 {
		t.Errorf("List = %d entries, %v; want none", len(l), err)
	}
}

func testPatch(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k := f.key("g1")
	_, err := f.idx.Patch(f.ctx, k, func(*sessions.Entry) error { return nil })
	wantNotFound(t, "Patch of an unknown key", err)
	f.absent(k)

	e, _ := f.begin(k, origin("hi"))
	f.clk.Advance(time.Minute)
	got, err := f.idx.Patch(f.ctx, k, func(p *sessions.Entry) error {
		p.Label, p.ModelOverride, p.QueueMode, p.QueueCap = "ops", "big", "steer", 3
		p.SessionKey, p.SessionID = "agent:x:evil", uuid.NewString() // ignored
		return nil
	})
	if err != nil {
		t.Fatalf("Patch: %v", err)
	}
	want := e
	want.Label, want.ModelOverride, want.QueueMode, want.QueueCap = "ops", "big", "steer", 3
	want.UpdatedAt = f.clk.Now() // and lastInteractionAt stays
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("patched entry (-want +got):\n%s", diff)
	}
	f.same("Patch", got)

	boom := errors.New("boom")
	_, err = f.idx.Patch(f.ctx, k, func(p *sessions.Entry) error { p.Label = "lost"; return boom })
	if !errors.Is(err, boom) {
		t.Errorf("Patch whose fn fails: error %v, want it to wrap the fn's", err)
	}
	if diff := cmp.Diff(got, f.get(k)); diff != "" {
		t.Errorf("a failed Patch changed the entry (-before +after):\n%s", diff)
	}
}

func testDelete(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k := f.key("g1")
	wantNotFound(t, "Delete of an unknown key", f.idx.Delete(f.ctx, k))

	e, _ := f.begin(k, origin("first words"))
	f.idx.AddCounters(k, sessions.Counters{Messages: 3, TotalTokens: 30})
	f.flush()
	f.clk.Advance(time.Minute)
	if err := f.idx.Delete(f.ctx, k); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	f.absent(k)
	if _, ok, err := f.idx.GetByID(e.SessionID); err != nil || ok {
		t.Errorf("GetByID of a deleted session = %v, %v; want not found", ok, err)
	}
	if l, err := f.idx.List(); err != nil || len(l) != 0 {
		t.Errorf("List after Delete: %d entries, %v; want none", len(l), err)
	}
	a := f.archived(k)
	if len(a) != 1 {
		t.Fatalf("Archived after Delete = %v, want the deleted session", ids(a))
	}
	want := sessions.Archived{SessionID: e.SessionID, Reason: "deleted", ArchivedAt: f.clk.Now(), Title: "first words",
		SessionStartedAt: t0, UpdatedAt: e.UpdatedAt, MessageCount: 3, TotalTokens: 30, Deleted: true}
	if diff := cmp.Diff(want, a[0], ignoreFile); diff != "" {
		t.Errorf("archived record (-want +got):\n%s", diff)
	}
	wantNotFound(t, "Delete twice", f.idx.Delete(f.ctx, k))

	// Switch brings the deleted session back with its title and counters.
	back, err := f.idx.Switch(f.ctx, k, e.SessionID)
	if err != nil {
		t.Fatalf("Switch to the deleted session: %v", err)
	}
	if back.SessionID != e.SessionID || back.Title != "first words" || back.MessageCount != 3 || back.TotalTokens != 30 {
		t.Errorf("restored entry %+v, want id %s, its title and counters", back, e.SessionID)
	}
	f.same("Switch", back)
	if a := f.archived(k); len(a) != 0 {
		t.Errorf("Archived after restoring = %v, want none", ids(a))
	}
	if next, info := f.begin(k, origin("again")); next.SessionID != e.SessionID || info.Created {
		t.Errorf("Begin after restoring: session %s created=%v, want %s kept", next.SessionID, info.Created, e.SessionID)
	}
}

// ignoreFile leaves out Archived.File, the files backend's transcript name.
var ignoreFile = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".File" }, cmp.Ignore())

func testSwitch(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k := f.key("g1")
	one, _ := f.begin(k, origin("one"))
	f.clk.Advance(time.Minute)
	reset, err := f.idx.Reset(f.ctx, k, sessions.ResetOptions{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	two, _ := f.begin(k, origin("two"))
	if two.SessionID != reset.SessionID || two.Title != "two" {
		t.Fatalf("Begin after Reset: %s %q, want %s titled by its first message", two.SessionID, two.Title, reset.SessionID)
	}
	f.clk.Advance(time.Minute)
	cur, err := f.idx.Switch(f.ctx, k, one.SessionID)
	if err != nil {
		t.Fatalf("Switch: %v", err)
	}
	if cur.SessionID != one.SessionID || cur.Title != "one" {
		t.Errorf("after Switch: %s %q, want %s %q", cur.SessionID, cur.Title, one.SessionID, "one")
	}
	f.same("Switch", cur)
	a := f.archived(k)
	if !slices.Equal(ids(a), []string{two.SessionID}) || a[0].Reason != "switch" || a[0].Title != "two" {
		t.Errorf("Archived after Switch = %+v, want only %s (reason switch)", a, two.SessionID)
	}
	// The session switched to starts again at the switch, and the one
	// switched away from ended then (its span): what the room said before
	// the switch is not the switched-to session's (dispatch's room
	// history), nor are the results of subagents the other one spawned.
	if !cur.SessionStartedAt.Equal(f.clk.Now()) || !cur.CreatedAt.Equal(one.CreatedAt) {
		t.Errorf("Switch: sessionStartedAt %v, createdAt %v; want the switch's instant %v and the key's creation %v",
			cur.SessionStartedAt, cur.CreatedAt, f.clk.Now(), one.CreatedAt)
	}
	if len(a) == 1 && (!a[0].ArchivedAt.Equal(f.clk.Now()) || !a[0].SessionStartedAt.Equal(reset.SessionStartedAt)) {
		t.Errorf("Switch: archived %s spans %v to %v, want %v to the switch's instant %v", two.SessionID,
			a[0].SessionStartedAt, a[0].ArchivedAt, reset.SessionStartedAt, f.clk.Now())
	}
	// Switching to the current session changes nothing.
	same, err := f.idx.Switch(f.ctx, k, one.SessionID)
	if err != nil || same.SessionID != one.SessionID {
		t.Errorf("Switch to the current session = %s, %v", same.SessionID, err)
	}
	if got := ids(f.archived(k)); !slices.Equal(got, []string{two.SessionID}) {
		t.Errorf("Archived after a no-op Switch = %v", got)
	}
	// And back again.
	cur, err = f.idx.Switch(f.ctx, k, two.SessionID)
	if err != nil || cur.SessionID != two.SessionID || cur.Title != "two" {
		t.Fatalf("Switch back = %s %q, %v", cur.SessionID, cur.Title, err)
	}
	if got := ids(f.archived(k)); !slices.Equal(got, []string{one.SessionID}) {
		t.Errorf("Archived after switching back = %v, want [%s]", got, one.SessionID)
	}
}

func testSwitchStrangers(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	mine, theirs := f.key("mine"), f.key("theirs")
	f.begin(mine, origin("mine"))
	old, _ := f.begin(theirs, origin("theirs"))
	if _, err := f.idx.Reset(f.ctx, theirs, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	before := f.get(mine)
	// Another chat's archived session, an unknown id and ids that are no
	// session id at all: none is mine to switch to.
	for _, id := range []string{old.SessionID, uuid.NewString(), "", "../../etc/passwd", "' OR '1'='1", "😀", string(make([]byte, 300))} {
		_, err := f.idx.Switch(f.ctx, mine, id)
		wantNotFound(t, "Switch to "+clip(id), err)
	}
	if diff := cmp.Diff(before, f.get(mine)); diff != "" {
		t.Errorf("refused Switches changed the entry (-before +after):\n%s", diff)
	}
	if got := ids(f.archived(theirs)); !slices.Equal(got, []string{old.SessionID}) {
		t.Errorf("the other chat's archive = %v, want [%s]", got, old.SessionID)
	}
}

func clip(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}
