package transcript

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

// TestPiSessionFile loads a file in pi's format holding an abandoned
// branch, a branch summary, tool calls, a compaction, entry types we do not
// model and one we do not know.
func TestPiSessionFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pi.jsonl")
	copyFile(t, "testdata/pi_session.jsonl", path)
	tr := newTestTranscript(t, path, newMemLocker(), nil)

	// The chain as pi's buildSessionContext + convertToLlm see it
	// (testdata/pi_session.pi_context.json was produced by a restatement of
	// that code run on the same file).
	tr.mu.Lock()
	f, _ := os.Open(path)
	st, err := tr.stateLocked(f, nil)
	f.Close()
	tr.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	type piMsg struct {
		Role       string `json:"role"`
		Text       string `json:"text"`
		ToolCallID string `json:"toolCallId"`
		Timestamp  int64  `json:"timestamp"`
	}
	raw := rawChain(st)
	got := make([]piMsg, len(raw))
	for i, m := range raw {
		var parts []string
		for _, c := range m.Content {
			v := c.Text
			if c.Type == sessions.BlockThinking {
				v = c.Thinking
			} else if c.Type == sessions.BlockToolCall {
				v = c.ID
			}
			parts = append(parts, c.Type+":"+v)
		}
		got[i] = piMsg{m.Role, strings.Join(parts, "|"), m.ToolCallID, m.Timestamp}
	}
	var want []piMsg
	b, err := os.ReadFile("testdata/pi_session.pi_context.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("chain differs from pi's (-pi +ours):\n%s", d)
	}

	// What we send: tool calls paired, user runs merged.
	c, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "pi_session.context.golden.json", append(out, '\n'))
	if c.LeafID != "d4000009" || !strings.Contains(c.Summary, "explored src") {
		t.Errorf("LeafID %q, Summary %q", c.LeafID, c.Summary)
	}
	for _, m := range c.Messages {
		if strings.Contains(m.Text(), "util.go.") || strings.Contains(m.Text(), "cat secrets") {
			t.Errorf("abandoned branch or excluded bash run in context: %q", m.Text())
		}
	}

	// Appending continues pi's leaf; the file still reads in pi's shape.
	ids, err := tr.Append(ctx, assistantText("We were running the tests."))
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	last := lines[len(lines)-1]
	if last["parentId"] != "d4000009" || last["id"] != ids[0] {
		t.Errorf("appended entry %v, want parentId d4000009", last)
	}
	if lines[0]["id"] != "0d9d3f5e-6c1b-4a5e-9a57-2f2f4f1c9b10" || len(lines) != 27 {
		t.Errorf("header rewritten or lines lost: %d lines, header %v", len(lines), lines[0])
	}

	hist, err := tr.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantHist := []string{
		"user:List the files in src.", "assistant:thinking+Let me look.+call(toolu_01)", "result(toolu_01)=main.go\nutil.go",
		"assistant:There are two files: main.go and util.go.",
		"user:The following is a summary of a branch that this conversation came back from:\n\n<summary>\nThe user asked to delete util.go and then changed their mind.</summary>",
		"user:Show main.go instead.", "assistant:call(toolu_02)", "result(toolu_02)=package main\n\nfunc main() {}\n",
		"assistant:main.go holds an empty main function.", "user:Remember: answer briefly.", "user:Run the tests and the linter.",
		"assistant:call(toolu_03)+call(toolu_04)", "result(toolu_04)=ok", "user:Ran `git status`\n```\nclean\n```",
		"user:Sorry, the session crashed. Where were we?", "assistant:We were running the tests.",
	}
	if d := cmp.Diff(wantHist, summarize(hist)); d != "" {
		t.Errorf("History (-want +got):\n%s", d)
	}
	rh, err := ReadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(hist, rh); d != "" {
		t.Errorf("ReadHistory differs from History:\n%s", d)
	}
}

// rawChain is the chain before pairing and merging (what pi would send).
func rawChain(st *fileState) []sessions.Message {
	var out []sessions.Message
	if st.view.comp != nil {
		out = append(out, st.view.comp.Comp.Message())
	}
	for _, n := range st.view.entries {
		out = append(out, *n.Msg)
	}
	return out
}

func TestContextRebuildRules(t *testing.T) {
	tests := []struct {
		name string
		msgs []sessions.Message
		want []string
	}{
		{"unpaired call gets a synthetic error result",
			[]sessions.Message{user("go"), assistantCalls("c1", "c2"), toolResult("c1", "r1"), user("next")},
			[]string{"user:go", "assistant:call(c1)+call(c2)", "result(c1)=r1", "result(c2)=" + missingToolResult, "user:next"}},
		{"interrupted at the end",
			[]sessions.Message{user("go"), assistantCalls("c1")},
			[]string{"user:go", "assistant:call(c1)", "result(c1)=" + missingToolResult}},
		{"results reordered to call order",
			[]sessions.Message{user("go"), assistantCalls("c1", "c2"), toolResult("c2", "r2"), toolResult("c1", "r1"), assistantText("ok")},
			[]string{"user:go", "assistant:call(c1)+call(c2)", "result(c1)=r1", "result(c2)=r2", "assistant:ok"}},
		{"user message between call and result moves after the results",
			[]sessions.Message{user("go"), assistantCalls("c1"), user("hurry"), toolResult("c1", "r1"), assistantText("ok")},
			[]string{"user:go", "assistant:call(c1)", "result(c1)=r1", "user:hurry", "assistant:ok"}},
		{"orphan results dropped",
			[]sessions.Message{toolResult("c0", "lost"), user("go"), assistantText("hi"), toolResult("c9", "stray"), user("again")},
			[]string{"user:go", "assistant:hi", "user:again"}},
		{"result of an earlier turn is an orphan",
			[]sessions.Message{user("go"), assistantCalls("c1"), assistantText("gave up"), toolResult("c1", "late")},
			[]string{"user:go", "assistant:call(c1)", "result(c1)=" + missingToolResult, "assistant:gave up"}},
		{"duplicate result used once",
			[]sessions.Message{user("go"), assistantCalls("c1"), toolResult("c1", "a"), toolResult("c1", "b")},
			[]string{"user:go", "assistant:call(c1)", "result(c1)=a"}},
		{"consecutive users merged",
			[]sessions.Message{user("a"), user("b"), user("c"), assistantText("x"), user("d"), user("e")},
			[]string{"user:a\n\nb\n\nc", "assistant:x", "user:d\n\ne"}},
		{"users merged across a dropped orphan",
			[]sessions.Message{user("a"), toolResult("zz", "orphan"), user("b")},
			[]string{"user:a\n\nb"}},
		{"empty", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &chainView{}
			for i := range tt.msgs {
				v.entries = append(v.entries, &Node{ID: fmt.Sprintf("e%07d", i), Kind: KindMessage, Msg: &tt.msgs[i]})
			}
			c := buildContext(v, "leaf")
			if d := cmp.Diff(tt.want, summarize(c.Messages)); d != "" {
				t.Errorf("context (-want +got):\n%s", d)
			}
			if len(c.EntryIDs) != len(c.Messages) {
				t.Errorf("%d entry ids for %d messages", len(c.EntryIDs), len(c.Messages))
			}
			for i, m := range c.Messages {
				if m.Role == sessions.RoleToolResult && m.Text() == missingToolResult && (!m.IsError || c.EntryIDs[i] != "") {
					t.Errorf("synthetic result %d: isError %v, entry id %q", i, m.IsError, c.EntryIDs[i])
				}
			}
			// Merging never edits the messages it was given.
			for i, m := range tt.msgs {
				if m.Role == sessions.RoleUser && len(m.Content) != 1 {
					t.Errorf("input message %d was modified: %v", i, m.Content)
				}
			}
		})
	}
}

func TestMergedSummaryKeepsEntryID(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	ids, err := tr.Append(ctx, user("a"), assistantText("b"), user("c"), assistantText("d"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "S", FirstKeptEntryID: ids[2]}); err != nil {
		t.Fatal(err)
	}
	c, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user:" + summaryPrefix + "S" + summarySuffix + "\n\nc", "assistant:d"}
	if d := cmp.Diff(want, summarize(c.Messages)); d != "" {
		t.Errorf("context (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{ids[2], ids[3]}, c.EntryIDs); d != "" {
		t.Errorf("entry ids (-want +got):\n%s", d)
	}
	if c.Summary != "S" {
		t.Errorf("Summary = %q", c.Summary)
	}
}

// TestIncrementalContextMatchesRebuild: after every append of a random
// turn shape, the cached (incrementally extended) context equals a context
// rebuilt from the file.
func TestIncrementalContextMatchesRebuild(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 9))
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	for i := range 150 {
		var msgs []sessions.Message
		switch rng.IntN(6) {
		case 0, 1:
			msgs = []sessions.Message{user(fmt.Sprint("u", i))}
		case 2:
			msgs = []sessions.Message{user(fmt.Sprint("u", i)), user(fmt.Sprint("v", i))}
		case 3:
			msgs = []sessions.Message{assistantText(fmt.Sprint("a", i))}
		case 4:
			id := fmt.Sprint("c", i)
			msgs = []sessions.Message{assistantCalls(id), toolResult(id, "r")}
		case 5:
			msgs = []sessions.Message{assistantCalls(fmt.Sprint("d", i))} // result never comes
		}
		if _, err := tr.Append(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
		got, err := tr.Context(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, err := LoadFile(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("after append %d, cached context differs from a rebuild (-want +got):\n%s", i, d)
		}
	}
}

// TestHandedOutContextStaysAsItWas: Context shares its slices with the
// cache without copying them; later appends (one merged into the last user
// message among them) and a caller appending to the slices it got change
// nothing anyone else holds.
func TestHandedOutContextStaysAsItWas(t *testing.T) {
	ctx := context.Background()
	tr := newTestTranscript(t, tempPath(t), newMemLocker(), nil)
	t.Cleanup(func() { _ = tr.Close() })
	if _, err := tr.Append(ctx, user("a")); err != nil {
		t.Fatal(err)
	}
	c1, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids1 := append([]string(nil), c1.EntryIDs...)
	// A second user message merges into the cached last one.
	if _, err := tr.AppendLazy(ctx, user("b")); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"user:a"}, summarize(c1.Messages)); d != "" {
		t.Errorf("the merge changed a context handed out before it (-want +got):\n%s", d)
	}
	if d := cmp.Diff(ids1, c1.EntryIDs); d != "" {
		t.Errorf("the merge changed entry ids handed out before it (-want +got):\n%s", d)
	}

	// Two more appends leave the cache's slices room to grow in place.
	if _, err := tr.Append(ctx, assistantText("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendLazy(ctx, user("c")); err != nil {
		t.Fatal(err)
	}
	c2, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mine := append(c2.Messages, assistantText("the caller's own"))
	if _, err := tr.Append(ctx, assistantText("appended")); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"user:a\n\nb", "assistant:x", "user:c", "assistant:the caller's own"}, summarize(mine)); d != "" {
		t.Errorf("an append reached the caller's slice (-want +got):\n%s", d)
	}
	c3, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"user:a\n\nb", "assistant:x", "user:c", "assistant:appended"}, summarize(c3.Messages)); d != "" {
		t.Errorf("context after the appends (-want +got):\n%s", d)
	}
}

// TestAppendLazyContextIsAppendLazyThenContext: the context AppendLazyContext
// returns is the one a Context right after the append gives, for a new
// file, a file another File wrote, and after a compaction.
func TestAppendLazyContextIsAppendLazyThenContext(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	lock := newMemLocker()
	tr := newTestTranscript(t, path, lock, nil)
	other := newTestTranscript(t, path, lock, nil)
	t.Cleanup(func() { _ = tr.Close(); _ = other.Close() })
	check := func(step string, msgs ...sessions.Message) {
		t.Helper()
		ids, c, err := tr.AppendLazyContext(ctx, msgs...)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if len(ids) != len(msgs) {
			t.Fatalf("%s: %d ids for %d messages", step, len(ids), len(msgs))
		}
		want, err := newTestTranscript(t, path, nil, nil).Context(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, c); d != "" {
			t.Errorf("%s: AppendLazyContext's context differs from a fresh read (-want +got):\n%s", step, d)
		}
	}
	check("new file", user("one"))
	if _, err := tr.Append(ctx, assistantText("answer")); err != nil {
		t.Fatal(err)
	}
	check("after a reply", user("two"), user("three"))
	if _, err := other.Append(ctx, assistantText("from another writer")); err != nil {
		t.Fatal(err)
	}
	check("after another writer", user("four"))
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "so far"}); err != nil {
		t.Fatal(err)
	}
	check("after a compaction", user("five"))
}
