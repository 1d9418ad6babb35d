package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

var idRe = regexp.MustCompile(`^[0-9a-f]{8}$`)

func TestTranscriptAppendAndReload(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)

	c, err := tr.Context(ctx)
	if err != nil || len(c.Messages) != 0 || c.LeafID != "" {
		t.Fatalf("Context of a missing file = %+v, %v; want empty", c, err)
	}
	ids1, err := tr.Append(ctx, user("list files"))
	if err != nil {
		t.Fatal(err)
	}
	ids2, err := tr.Append(ctx, assistantCalls("call_1"), toolResult("call_1", "a.go"), assistantText("one file: a.go"))
	if err != nil {
		t.Fatal(err)
	}
	ids := append(ids1, ids2...)
	if len(ids) != 4 {
		t.Fatalf("got %d ids, want 4", len(ids))
	}

	lines := readLines(t, path)
	if len(lines) != 5 {
		t.Fatalf("file has %d lines, want header + 4", len(lines))
	}
	h := lines[0]
	for k, want := range map[string]any{"type": "session", "version": 3.0, "id": "3f2c7a9e-1b4d-4c8e-9f00-5a6b7c8d9e0f",
		"cwd": "/var/lib/gateway", "sessionKey": "agent:main:telegram:direct:42", "agentId": "main"} {
		if h[k] != want {
			t.Errorf("header %s = %v, want %v", k, h[k], want)
		}
	}
	var parent any
	seen := map[string]bool{}
	for i, l := range lines[1:] {
		id, _ := l["id"].(string)
		if !idRe.MatchString(id) || seen[id] {
			t.Errorf("line %d: id %q is not 8 unique hex chars", i+2, id)
		}
		seen[id] = true
		if id != ids[i] {
			t.Errorf("line %d: id %q, Append returned %q", i+2, id, ids[i])
		}
		if l["parentId"] != parent {
			t.Errorf("line %d: parentId %v, want %v", i+2, l["parentId"], parent)
		}
		if _, ok := l["timestamp"].(string); !ok || l["type"] != "message" {
			t.Errorf("line %d: %v", i+2, l)
		}
		parent = id
	}
	if tr := lines[3]["message"].(map[string]any); tr["isError"] != false {
		t.Errorf("toolResult isError = %v, want false written explicitly", tr["isError"])
	}

	cached, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user:list files", "assistant:call(call_1)", "result(call_1)=a.go", "assistant:one file: a.go"}
	if d := cmp.Diff(want, summarize(cached.Messages)); d != "" {
		t.Errorf("context (-want +got):\n%s", d)
	}
	if d := cmp.Diff(ids, cached.EntryIDs); d != "" {
		t.Errorf("entry ids (-want +got):\n%s", d)
	}
	if cached.LeafID != ids[3] {
		t.Errorf("LeafID = %q, want %q", cached.LeafID, ids[3])
	}

	// A fresh reader parses the file into exactly the cached context.
	loaded, err := LoadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(cached, loaded); d != "" {
		t.Errorf("reloaded context differs from the cached one (-cached +loaded):\n%s", d)
	}
}

func TestTranscriptWrittenGolden(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil, withClock(fixedClock()), withRand(seqRand()))
	if _, err := tr.Append(ctx, user("hello <world> & friends")); err != nil {
		t.Fatal(err)
	}
	msgs := []sessions.Message{
		assistantCalls("call_1"),
		toolResult("call_1", "ok"),
		{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockThinking, Thinking: "hmm"}, {Type: sessions.BlockText, Text: "done"}},
			Provider: "anthropic", Model: "claude", Usage: &sessions.Usage{Input: 10, Output: 2, TotalTokens: 12}, StopReason: "stop", Timestamp: 1777636800000},
	}
	ids, err := tr.Append(ctx, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "greeted", FirstKeptEntryID: ids[0], TokensBefore: 900, TokensAfter: 100}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "written.golden.jsonl", got)
}

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
	st, err := tr.stateLocked(f)
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

func TestTornLastLine(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		tail string
	}{
		{"half a line", `{"type":"message","id":"abcd0003","parentId":"abcd0002","timest`},
		{"single brace", `{`},
		{"garbage bytes", "\x00\x00\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t)
			log, logs := observedLogger()
			tr := newTestTranscript(t, path, newMemLocker(), log)
			ids, err := tr.Append(ctx, user("one"), assistantText("two"))
			if err != nil {
				t.Fatal(err)
			}
			appendRaw(t, path, tc.tail)

			for _, tr := range []*File{tr, newTestTranscript(t, path, newMemLocker(), log)} {
				c, err := tr.Context(ctx)
				if err != nil {
					t.Fatalf("Context: %v", err)
				}
				if d := cmp.Diff([]string{"user:one", "assistant:two"}, summarize(c.Messages)); d != "" {
					t.Errorf("context (-want +got):\n%s", d)
				}
			}
			if logs.FilterMessage("transcript: ignoring torn last line").Len() == 0 {
				t.Error("no warning about the torn line")
			}
			newIDs, err := tr.Append(ctx, user("three"))
			if err != nil {
				t.Fatal(err)
			}
			lines := readLines(t, path) // every line parses: the fragment is gone
			if len(lines) != 4 || lines[3]["parentId"] != ids[1] || lines[3]["id"] != newIDs[0] {
				t.Errorf("after append: %d lines, last %v", len(lines), lines[len(lines)-1])
			}
		})
	}
}

func TestTornHeader(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	if err := os.WriteFile(path, []byte(`{"type":"session","versi`), 0o600); err != nil {
		t.Fatal(err)
	}
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	c, err := tr.Context(ctx)
	if err != nil || len(c.Messages) != 0 {
		t.Fatalf("Context = %v, %v; want empty", c, err)
	}
	if _, err := tr.Append(ctx, user("hi")); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 2 || lines[0]["type"] != "session" || lines[1]["parentId"] != nil {
		t.Errorf("lines = %v", lines)
	}
}

func TestUnterminatedCompleteLine(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	ids, err := tr.Append(ctx, user("one"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.TrimSuffix(string(b), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	tr2 := newTestTranscript(t, path, newMemLocker(), nil)
	c, err := tr2.Context(ctx)
	if err != nil || len(c.Messages) != 1 {
		t.Fatalf("Context = %v, %v", summarize(c.Messages), err)
	}
	if _, err := tr2.Append(ctx, assistantText("two")); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 3 || lines[2]["parentId"] != ids[0] {
		t.Errorf("lines = %v", lines)
	}
}

func TestBadHeaderNamesLineNumber(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, content, want string
	}{
		{"no header", `{"type":"message","id":"aaaa0001","parentId":null,"message":{"role":"user","content":"a","timestamp":1}}` + "\n", "line 1: not a session header"},
		{"version 1", `{"type":"session","id":"s1","timestamp":"x","cwd":"/"}` + "\n", "line 1: transcript version 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := newTestTranscript(t, path, newMemLocker(), nil).Context(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Context error = %v, want one containing %q", err, tt.want)
			}
			var le *lineError
			if !errors.As(err, &le) {
				t.Errorf("error %v is not a *lineError", err)
			}
			if _, err := newTestTranscript(t, path, newMemLocker(), nil).Append(ctx, user("x")); err == nil {
				t.Error("Append to a transcript without a valid header succeeded")
			}
		})
	}
}

func TestLongLines(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	big := strings.Repeat("0123456789abcdef", 3<<16) // 3 MiB
	if _, err := tr.Append(ctx, user("first")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, user(big), assistantText(big[:1<<20+7]), user("after")); err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func() (sessions.Context, error){
		"tail":    func() (sessions.Context, error) { return LoadFile(path, nil) },
		"forward": func() (sessions.Context, error) { return forwardContext(t, path) },
	} {
		c, err := load()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(c.Messages) != 3 || c.Messages[0].Text() != "first\n\n"+big || len(c.Messages[1].Text()) != 1<<20+7 || c.Messages[2].Text() != "after" {
			t.Errorf("%s: long lines not read back intact (%d messages)", name, len(c.Messages))
		}
	}
}

// forwardContext loads path with the forward reader only.
func forwardContext(t testing.TB, path string) (sessions.Context, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return sessions.Context{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sessions.Context{}, err
	}
	st, err := loadForward(f, fi, zap.NewNop())
	if err != nil {
		return sessions.Context{}, err
	}
	return buildContext(st.view, st.leaf), nil
}

func appendRaw(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
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
				v.entries = append(v.entries, &sessions.Node{ID: fmt.Sprintf("e%07d", i), Kind: sessions.KindMessage, Msg: &tt.msgs[i]})
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

func TestAppendCompactionRejectsUnknownFirstKept(t *testing.T) {
	ctx := context.Background()
	tr := newTestTranscript(t, tempPath(t), newMemLocker(), nil)
	if _, err := tr.Append(ctx, user("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "S", FirstKeptEntryID: "nothere1"}); err == nil {
		t.Fatal("AppendCompaction with an unknown firstKeptEntryId succeeded")
	}
	c, err := tr.Context(ctx)
	if err != nil || len(c.Messages) != 1 || c.Summary != "" {
		t.Errorf("context after a rejected compaction: %v, %v", summarize(c.Messages), err)
	}
}

func TestConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	lock := newMemLocker()
	a := newTestTranscript(t, path, lock, nil)
	b := newTestTranscript(t, path, lock, nil) // a second handle, as another process would have
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := a
			if w%2 == 1 {
				tr = b
			}
			for i := range each {
				if _, err := tr.Append(ctx, user(fmt.Sprintf("w%d-%d", w, i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != workers*each+1 {
		t.Fatalf("%d lines, want %d", len(lines), workers*each+1)
	}
	seen := map[any]bool{}
	var parent any
	for i, l := range lines[1:] {
		if seen[l["id"]] || l["parentId"] != parent {
			t.Fatalf("line %d: id %v (dup %v), parent %v want %v", i+2, l["id"], seen[l["id"]], l["parentId"], parent)
		}
		seen[l["id"]] = true
		parent = l["id"]
	}
	ca, err := a.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(loaded, ca); d != "" {
		t.Errorf("handle a differs from the file:\n%s", d)
	}
	if d := cmp.Diff(loaded, cb); d != "" {
		t.Errorf("handle b differs from the file:\n%s", d)
	}
	if len(loaded.Messages) != 1 { // all user messages merge into one
		t.Errorf("%d messages, want 1 merged", len(loaded.Messages))
	}
}

func TestIDsUniqueInFile(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	// The generator repeats itself; ids must still be unique.
	tr := newTestTranscript(t, path, newMemLocker(), nil, withRand(seqRand(1, 1, 2, 2, 1, 3)))
	ids, err := tr.Append(ctx, user("a"), assistantText("b"), user("c"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"00000001", "00000002", "00000003"}, ids); d != "" {
		t.Errorf("ids (-want +got):\n%s", d)
	}
	// An id that only the unread part of a compacted file holds is avoided too.
	more := make([]sessions.Message, 100)
	for i := range more {
		more[i] = user(strings.Repeat("x", 1000))
	}
	ids2, err := tr.Append(ctx, more...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "s", FirstKeptEntryID: ids2[99]}); err != nil {
		t.Fatal(err)
	}
	tr2 := newTestTranscript(t, path, newMemLocker(), nil, withRand(seqRand(1, 2, 3, 0xabc)))
	got, err := tr2.Append(ctx, user("d"))
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != "00000abc" {
		t.Errorf("new id %q reuses an id of the unread prefix", got[0])
	}
}

func TestStats(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	if n, off, err := tr.Stats(ctx); n != 0 || off != 0 || err != nil {
		t.Fatalf("Stats of a missing file = %d, %d, %v", n, off, err)
	}
	var last []string
	for range 30 {
		ids, err := tr.Append(ctx, user(strings.Repeat("y", 4000)), assistantText("ok"))
		if err != nil {
			t.Fatal(err)
		}
		last = ids
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "s", FirstKeptEntryID: last[0]}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, user("after")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	wantOff := int64(strings.Index(string(b), `{"type":"compaction"`))
	for _, tr := range []*File{tr, newTestTranscript(t, path, newMemLocker(), nil)} {
		n, off, err := tr.Stats(ctx)
		if err != nil || n != 61 || off != wantOff {
			t.Errorf("Stats = %d, %d, %v; want 61, %d", n, off, err, wantOff)
		}
	}
}

func TestExternalChangeIsSeen(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	lock := newMemLocker()
	a := newTestTranscript(t, path, lock, nil)
	b := newTestTranscript(t, path, lock, nil)
	if _, err := a.Append(ctx, user("from a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Context(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(ctx, assistantText("a again")); err != nil {
		t.Fatal(err)
	}
	c, err := b.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"user:from a", "assistant:a again"}, summarize(c.Messages)); d != "" {
		t.Errorf("b missed a's append (-want +got):\n%s", d)
	}
	// The file is archived (reset): the transcript reads as empty.
	if err := os.Rename(path, path+".reset.1"); err != nil {
		t.Fatal(err)
	}
	if c, err := b.Context(ctx); err != nil || len(c.Messages) != 0 {
		t.Errorf("after archive: %v, %v", summarize(c.Messages), err)
	}
}

func TestLoadFileMissing(t *testing.T) {
	if _, err := LoadFile(filepath.Join(t.TempDir(), "nope.jsonl"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile of a missing file: %v, want ErrNotExist", err)
	}
	if _, err := ReadHistory(filepath.Join(t.TempDir(), "nope.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadHistory of a missing file: %v, want ErrNotExist", err)
	}
	tr, err := Open(filepath.Join(t.TempDir(), "x.jsonl"), "s", sessions.Header{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(context.Background(), user("x")); err == nil {
		t.Error("Append on a read-only transcript succeeded")
	}
}

func TestAppendHonoursLockContext(t *testing.T) {
	lock := newMemLocker()
	unlock, _ := lock.Lock(context.Background())
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tr := newTestTranscript(t, tempPath(t), lock, nil)
	if _, err := tr.Append(ctx, user("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a held lock and a cancelled context: %v", err)
	}
}

// writeCompactedSession writes n messages (user/assistant pairs with tool
// calls every tenth turn), then a compaction keeping the last keep of them,
// then tail messages after it. It returns the compaction's byte offset.
func writeCompactedSession(t testing.TB, path string, n, keep, tail int) int64 {
	t.Helper()
	ctx := context.Background()
	tr := newTestTranscript(t, path, newMemLocker(), nil, withoutSync())
	msgs := make([]sessions.Message, 0, n)
	for i := 0; len(msgs) < n; i++ {
		msgs = append(msgs, user(fmt.Sprintf("question %d: %s", i, strings.Repeat("lorem ipsum ", 20))))
		if i%10 == 9 {
			msgs = append(msgs, assistantCalls(fmt.Sprintf("call_%d", i)), toolResult(fmt.Sprintf("call_%d", i), "result"))
		}
		msgs = append(msgs, assistantText(fmt.Sprintf("answer %d: %s", i, strings.Repeat("dolor sit amet ", 20))))
	}
	msgs = msgs[:n]
	ids, err := tr.Append(ctx, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "long talk", FirstKeptEntryID: ids[n-keep], TokensBefore: 80000, TokensAfter: 5000}); err != nil {
		t.Fatal(err)
	}
	for i := range tail {
		if _, err := tr.Append(ctx, user(fmt.Sprintf("after %d", i)), assistantText("ok")); err != nil {
			t.Fatal(err)
		}
	}
	_, off, err := tr.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

func TestLoadCompactedReadsOnlyTheTail(t *testing.T) {
	ctx := context.Background()
	src := tempPath(t)
	off := writeCompactedSession(t, src, 10000, 50, 3)
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	full, err := forwardContext(t, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Messages) < 50 || full.Summary != "long talk" {
		t.Fatalf("forward load: %d messages, summary %q", len(full.Messages), full.Summary)
	}
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"from the end", nil},
		{"with offset hint", []Option{WithCompactionHint(off)}},
		{"with a stale hint", []Option{WithCompactionHint(off / 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "copy.jsonl")
			copyFile(t, src, path)
			tr := newTestTranscript(t, path, newMemLocker(), nil, tc.opts...)
			c, err := tr.Context(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(full, c); d != "" {
				t.Errorf("tail load differs from the full load (-full +tail):\n%s", d)
			}
			tr.mu.Lock()
			parsed, lo := tr.st.parsed, tr.st.lo
			tr.mu.Unlock()
			// 50 kept + compaction + 6 after, plus at most one block of extra lines.
			if parsed > 400 || lo < fi.Size()/2 {
				t.Errorf("parsed %d of 10,000+ lines, read from offset %d of %d", parsed, lo, fi.Size())
			}
			// An append extends the cached context without reparsing.
			if _, err := tr.Append(ctx, user("one more")); err != nil {
				t.Fatal(err)
			}
			c2, err := tr.Context(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tr.mu.Lock()
			parsed2 := tr.st.parsed
			tr.mu.Unlock()
			if parsed2 != parsed || c2.Messages[len(c2.Messages)-1].Text() != "one more" {
				t.Errorf("append reparsed (%d -> %d lines) or lost the message", parsed, parsed2)
			}
		})
	}
}

func TestCompactionKeepingOlderEntriesLoadsBackwards(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil, withoutSync())
	var first []string
	for i := range 300 {
		ids, err := tr.Append(ctx, user(fmt.Sprintf("u%d %s", i, strings.Repeat("z", 500))), assistantText(fmt.Sprintf("a%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if i == 20 {
			first = ids
		}
	}
	// Keeps almost everything: the loader must walk back many blocks.
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "s", FirstKeptEntryID: first[0]}); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	full, err := forwardContext(t, path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(full, c); d != "" {
		t.Errorf("(-full +tail):\n%s", d)
	}
	if len(c.Messages) != 1+2*280-1 { // summary merged with u20
		t.Errorf("%d messages", len(c.Messages))
	}
	// A second compaction that keeps nothing.
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "t"}); err != nil {
		t.Fatal(err)
	}
	c, err = tr.Context(ctx)
	if err != nil || len(c.Messages) != 1 || c.Summary != "t" {
		t.Errorf("after keep-nothing compaction: %v, %v", summarize(c.Messages), err)
	}
}

// TestAppendLazyIsReadAndChainedLikeAppend: lazily appended inputs are in
// the file at once (a reader in another process sees them) and the next
// Append chains after them.
func TestAppendLazyIsReadAndChainedLikeAppend(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	in := user("input")
	in.RecordIDs = []string{"tg:default:1:1"}
	if _, err := tr.AppendLazy(ctx, in); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFile(path, nil)
	if err != nil || len(c.Messages) != 1 || c.Messages[0].Text() != "input" {
		t.Fatalf("lazy append not in the file: %+v %v", c.Messages, err)
	}
	if _, err := tr.Append(ctx, assistantText("reply")); err != nil {
		t.Fatal(err)
	}
	other := newTestTranscript(t, path, newMemLocker(), nil)
	rs, err := other.Records(ctx, []string{"tg:default:1:1"})
	if err != nil || !rs.Consumed["tg:default:1:1"] || !rs.Answered || rs.Answer != "reply" {
		t.Fatalf("records after reopen %+v %v", rs, err)
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
