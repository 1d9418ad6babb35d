package sessionstest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

// CursorsOpener returns a new, empty cursor store, or with share (a store
// it returned earlier) a second handle on share's storage, as another
// process would open it. It releases what it opened when t ends.
type CursorsOpener func(t *testing.T, share sessions.Cursors) sessions.Cursors

// TestCursors runs the conformance suite of sessions.Cursors against the
// stores open returns, as parallel subtests.
func TestCursors(t *testing.T, open CursorsOpener) {
	cases := []struct {
		name string
		run  func(t *testing.T, open CursorsOpener)
	}{
		{"UnsetUntilSet", testCursorsUnset},
		{"SetGetReopen", testCursorsSet},
		{"ConcurrentSetsLoseNothing", testCursorsConcurrent},
		{"HostileScopesStoredApart", testCursorsHostileScopes},
		{"RefusedInput", testCursorsRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

type cursorFixture struct {
	t    *testing.T
	open CursorsOpener
	c    sessions.Cursors
	ctx  context.Context
}

func newCursorFixture(t *testing.T, open CursorsOpener) *cursorFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &cursorFixture{t: t, open: open, c: open(t, nil), ctx: ctx}
}

func (f *cursorFixture) set(c sessions.Cursors, scope, name, value string) {
	f.t.Helper()
	if err := c.SetCursor(f.ctx, scope, name, value); err != nil {
		f.t.Fatalf("SetCursor(%q, %q, %q): %v", scope, name, value, err)
	}
}

// want fails unless c holds value (ok) or nothing (!ok) for scope/name.
func (f *cursorFixture) want(c sessions.Cursors, scope, name, value string, ok bool) {
	f.t.Helper()
	got, found, err := c.Cursor(f.ctx, scope, name)
	if err != nil || found != ok || got != value {
		f.t.Errorf("Cursor(%q, %q) = %q, %v, %v; want %q, %v", scope, name, got, found, err, value, ok)
	}
}

func (f *cursorFixture) all(c sessions.Cursors, scope string) map[string]string {
	f.t.Helper()
	m, err := c.CursorsOf(f.ctx, scope)
	if err != nil {
		f.t.Fatalf("CursorsOf(%q): %v", scope, err)
	}
	return m
}

func testCursorsUnset(t *testing.T, open CursorsOpener) {
	f := newCursorFixture(t, open)
	f.want(f.c, "telegram:bot1", "offset", "", false)
	if m := f.all(f.c, "telegram:bot1"); len(m) != 0 {
		t.Errorf("CursorsOf a new store = %v, want none", m)
	}
}

func testCursorsSet(t *testing.T, open CursorsOpener) {
	f := newCursorFixture(t, open)
	for _, v := range []string{"100", "101", "'; DROP TABLE cursors; --", "日本語", ""} {
		f.set(f.c, "telegram:bot1", "offset", v)
		f.want(f.c, "telegram:bot1", "offset", v, true) // "" is set, not unset
	}
	f.set(f.c, "telegram:bot1", "migration:-100", "-1001")
	f.set(f.c, "telegram:bot1", "offset", "7")
	f.set(f.c, "telegram:Bot1", "offset", "8") // scopes differ in case
	f.set(f.c, "telegram:bot2", "offset", "9")
	f.want(f.c, "telegram:bot3", "offset", "", false)
	f.want(f.c, "telegram:bot1", "migration:-101", "", false)
	want := map[string]string{"offset": "7", "migration:-100": "-1001"}
	if diff := cmp.Diff(want, f.all(f.c, "telegram:bot1")); diff != "" {
		t.Errorf("CursorsOf (-want +got):\n%s", diff)
	}
	// A returned map belongs to the caller.
	m := f.all(f.c, "telegram:bot1")
	m["offset"] = "changed"
	f.want(f.c, "telegram:bot1", "offset", "7", true)
	// Another handle (a restart) reads the same.
	other := f.open(t, f.c)
	if diff := cmp.Diff(want, f.all(other, "telegram:bot1")); diff != "" {
		t.Errorf("CursorsOf through a second handle (-want +got):\n%s", diff)
	}
	f.want(other, "telegram:Bot1", "offset", "8", true)
	f.want(other, "telegram:bot2", "offset", "9", true)
	// Setting the value it has changes nothing; the last writer wins.
	f.set(other, "telegram:bot1", "offset", "7")
	f.set(other, "telegram:bot1", "offset", "10")
	f.want(f.c, "telegram:bot1", "offset", "10", true)
}

// testCursorsConcurrent: 20 goroutines on two handles set names of one
// scope, several times each; every name holds its last value.
func testCursorsConcurrent(t *testing.T, open CursorsOpener) {
	f := newCursorFixture(t, open)
	handles := []sessions.Cursors{f.c, f.open(t, f.c)}
	const rounds = 5
	parallel(goroutines, func(i int) {
		for r := range rounds {
			if err := handles[(i+r)%2].SetCursor(f.ctx, "telegram:bot", fmt.Sprint("migration:", i), fmt.Sprint(r)); err != nil {
				t.Error(err)
			}
		}
	})
	got := f.all(f.open(t, f.c), "telegram:bot")
	want := map[string]string{}
	for i := range goroutines {
		want[fmt.Sprint("migration:", i)] = fmt.Sprint(rounds - 1)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after concurrent sets (-want +got): an update was lost\n%s", diff)
	}
}

// testCursorsHostileScopes: scopes that would be paths or SQL are stored,
// each apart from every other.
func testCursorsHostileScopes(t *testing.T, open CursorsOpener) {
	f := newCursorFixture(t, open)
	scopes := []string{"..", ".", "../x", "..%2Fx", "%2E%2E", "a/b", "a\\b", "/etc/passwd", "~", " ",
		"'; DROP TABLE cursors; --", "CON", "日本語", strings.Repeat("z", sessions.MaxCursorScope), "x.json", "x.json.lock"}
	for i, s := range scopes {
		f.set(f.c, s, "../name", fmt.Sprint(i))
	}
	other := f.open(t, f.c)
	for i, s := range scopes {
		if diff := cmp.Diff(map[string]string{"../name": fmt.Sprint(i)}, f.all(other, s)); diff != "" {
			t.Errorf("CursorsOf(%q) (-want +got):\n%s", s, diff)
		}
	}
	name := strings.Repeat("n", sessions.MaxCursorName)
	value := strings.Repeat("v", sessions.MaxCursorValue)
	f.set(f.c, "s", name, value)
	f.want(other, "s", name, value, true)
}

func testCursorsRefused(t *testing.T, open CursorsOpener) {
	f := newCursorFixture(t, open)
	bad := []struct{ what, scope, name, value string }{
		{"empty scope", "", "offset", "1"},
		{"empty name", "s", "", "1"},
		{"NUL in scope", "a\x00b", "offset", "1"},
		{"NUL in name", "s", "a\x00b", "1"},
		{"NUL in value", "s", "offset", "1\x00"},
		{"invalid UTF-8 scope", "\xff", "offset", "1"},
		{"invalid UTF-8 value", "s", "offset", "\xc3"},
		{"long scope", strings.Repeat("z", sessions.MaxCursorScope+1), "offset", "1"},
		{"long name", "s", strings.Repeat("n", sessions.MaxCursorName+1), "1"},
		{"long value", "s", "offset", strings.Repeat("v", sessions.MaxCursorValue+1)},
	}
	for _, b := range bad {
		if err := f.c.SetCursor(f.ctx, b.scope, b.name, b.value); err == nil {
			t.Errorf("SetCursor with %s: stored, want an error", b.what)
		} else if !strings.Contains(err.Error(), "cursor") {
			t.Errorf("SetCursor with %s = %v: the error does not name the cursor", b.what, err)
		}
		if b.value == "1" {
			if _, _, err := f.c.Cursor(f.ctx, b.scope, b.name); err == nil {
				t.Errorf("Cursor with %s: no error", b.what)
			}
		}
	}
	if m := f.all(f.c, "s"); len(m) != 0 {
		t.Errorf("refused input was stored: %v", m)
	}
}
