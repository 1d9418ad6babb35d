package dispatch

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// Mobile keyboards put a tab, a newline or a non-breaking space after a
// command as often as a plain space: each ends the command's name.
func TestParseCommandAnyWhiteSpaceEndsTheName(t *testing.T) {
	none := sessions.ResetConfig{ResetTriggers: []string{}}
	fresh := sessions.ResetConfig{ResetTriggers: []string{"/fresh"}}
	tests := []struct {
		text      string
		rc        sessions.ResetConfig
		cmd, args string
	}{
		{"/model openai/gpt-4o", sessions.ResetConfig{}, "model", "openai/gpt-4o"},
		{"/model\topenai/gpt-4o", sessions.ResetConfig{}, "model", "openai/gpt-4o"},
		{"/model\nopenai/gpt-4o", sessions.ResetConfig{}, "model", "openai/gpt-4o"},
		{"/model\u00a0openai/gpt-4o", sessions.ResetConfig{}, "model", "openai/gpt-4o"},
		{"/remind\u00a0in 2 hours stand-up", sessions.ResetConfig{}, "remind", "in 2 hours stand-up"},
		{"/remind\u2003tomorrow 09:00 x", sessions.ResetConfig{}, "remind", "tomorrow 09:00 x"},
		{"/new\u00a0hello", sessions.ResetConfig{}, "new", "hello"},
		{"/reset\thello", sessions.ResetConfig{}, "reset", "hello"},
		{"/FRESH\u00a0start", fresh, "reset", "start"},
		{"/modelé", sessions.ResetConfig{}, "", ""},
		// An operator's trigger list is the whole set of reset commands:
		// empty disables them, a custom list replaces /new and /reset.
		{"/new", none, "", ""},
		{"/new hello", none, "", ""},
		{"/reset", none, "", ""},
		{"/new", fresh, "", ""},
		{"/reset now", fresh, "", ""},
		{"/status", none, "status", ""},
	}
	for _, tt := range tests {
		cmd, args := parseCommand(tt.text, tt.rc)
		if cmd != tt.cmd || args != tt.args {
			t.Errorf("parseCommand(%q, %v) = (%q, %q), want (%q, %q)", tt.text, tt.rc.ResetTriggers, cmd, args, tt.cmd, tt.args)
		}
	}
}

// resetTriggers: [] means no message resets a session: "/new" is a plain
// message for the agent, and the session keeps its id.
func TestEmptyResetTriggersLeaveNewToTheAgent(t *testing.T) {
	m := &model{}
	h := newHarness(t, "", m, func(h *harness) { h.reset = sessions.ResetConfig{ResetTriggers: []string{}} })
	h.handle(in("tg", "7", "hello"))
	h.drained()
	key := "agent:main:tg:direct:7"
	before := sessionID(t, h, key)
	h.handle(in("tg", "7", "/new what is this?"))
	h.handle(in("tg", "7", "/reset"))
	h.drained()
	if after := sessionID(t, h, key); after != before {
		t.Fatalf("session %s replaced by %s: an empty trigger list reset it", before, after)
	}
	var got []string
	for _, r := range m.requests() {
		got = append(got, lastUserTexts(r.Messages)...)
	}
	if s := strings.Join(got, "|"); !strings.Contains(s, "/new what is this?") || !strings.Contains(s, "/reset") {
		t.Fatalf("the agent saw %q, want /new and /reset as messages", got)
	}
}

// A /new whose model is followed by a message after a tab or a
// non-breaking space runs a turn: it counts against the limits like
// "/new model message" does.
func TestNewWithModelAndMessageCountsAgainstLimits(t *testing.T) {
	d := &Dispatcher{opts: Options{Providers: []string{"openai"}}}
	for _, text := range []string{"/new openai/gpt-4o question", "/new openai/gpt-4o\tquestion",
		"/new openai/gpt-4o\u00a0question", "/new openai/gpt-4o\nquestion"} {
		w := &work{}
		w.Command, w.Args = parseCommand(text, sessions.ResetConfig{})
		if !d.limitedCommand(w) {
			t.Errorf("%q (args %q) is not counted against the limits", text, w.Args)
		}
	}
	w := &work{}
	w.Command, w.Args = parseCommand("/new openai/gpt-4o", sessions.ResetConfig{})
	if d.limitedCommand(w) {
		t.Errorf("/new with a model only counted against the limits")
	}
}

// /remind's sub-commands end at any white space: a non-breaking space
// after "cancel" is still a (privileged) cancel.
func TestRemindSubcommandAnyWhiteSpace(t *testing.T) {
	for _, args := range []string{"cancel\u00a0abc", "cancel\tabc", "list\u00a0", "cancel\nabc"} {
		if !privilegedRemind("remind", args) {
			t.Errorf("/remind %q is not privileged", args)
		}
	}
}
