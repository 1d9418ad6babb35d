package agents

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// checkWeigh weighs c with h and fails unless every size and the sum are
// what llm.EstimateMessage gives afresh.
func checkWeigh(t *testing.T, what string, h *historySizes, c sessions.Context) {
	t.Helper()
	total := h.weigh(c.Messages)
	sizes := make([]int64, len(c.Messages))
	want := make([]int64, len(c.Messages))
	for i, m := range c.Messages {
		sizes[i], want[i] = h.size(i), llm.EstimateMessage(m)
	}
	if !slices.Equal(sizes, want) || total != llm.EstimateMessages(c.Messages) {
		t.Fatalf("%s: weighed %v (sum %d), want %v (sum %d)", what, sizes, total, want, llm.EstimateMessages(c.Messages))
	}
	images := slices.ContainsFunc(c.Messages, func(m sessions.Message) bool { return hasImage(&m) })
	if h.hasImages() != images {
		t.Fatalf("%s: hasImages %v, the messages hold images: %v", what, h.hasImages(), images)
	}
}

// TestHistorySizesFollowTheTranscript weighs a files backend session's
// context after each kind of change with one memo: appends, a user
// message merged into the last one (same position, same block count,
// longer text), a compaction (positions shift, a summary first), a
// context shrunk and a reset to a new session. A memo keyed by position,
// count or length alone returns a stale size in one of them.
func TestHistorySizesFollowTheTranscript(t *testing.T) {
	k := openDisk(t, t.TempDir(), Defaults{}, []Agent{{ID: "main"}}, &fakeProvider{name: "fake"})
	key, _ := routing.PeerKey("main", "telegram", "", routing.Direct, "7")
	k.begin("main", key)
	tr := k.transcript("main", key)
	ctx := context.Background()
	h := &historySizes{}
	read := func(what string) sessions.Context {
		t.Helper()
		c, err := tr.Context(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkWeigh(t, what, h, c)
		return c
	}
	at := time.Unix(100, 0)
	for i := range 5 {
		if _, err := tr.Append(ctx, sessions.UserText(fmt.Sprintf("q%d", i), at), assistantText(fmt.Sprintf("a%d", i))); err != nil {
			t.Fatal(err)
		}
		read(fmt.Sprintf("turn %d", i))
	}
	if _, err := tr.Append(ctx, sessions.UserText("short", at)); err != nil {
		t.Fatal(err)
	}
	before := read("user message")
	if _, err := tr.Append(ctx, sessions.UserText(strings.Repeat("long ", 200), at)); err != nil {
		t.Fatal(err)
	}
	after := read("merged user message")
	if len(after.Messages) != len(before.Messages) || len(after.Messages[len(after.Messages)-1].Content) != 1 {
		t.Fatalf("the second user message was not merged into the first: %d → %d messages", len(before.Messages), len(after.Messages))
	}
	if _, err := tr.Append(ctx, assistantText("answer")); err != nil {
		t.Fatal(err)
	}
	c := read("answer")
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: strings.Repeat("summary ", 50), FirstKeptEntryID: c.EntryIDs[6]}); err != nil {
		t.Fatal(err)
	}
	if c = read("compaction"); c.Summary == "" {
		t.Fatal("no summary after the compaction")
	}
	checkWeigh(t, "shorter context", h, sessions.Context{Messages: c.Messages[2:]})
	checkWeigh(t, "empty context", h, sessions.Context{})
	// A reset: another session of the same key, weighed with the same memo.
	key2, _ := routing.PeerKey("main", "telegram", "", routing.Direct, "8")
	k.begin("main", key2)
	tr = k.transcript("main", key2)
	if _, err := tr.Append(ctx, sessions.UserText(strings.Repeat("x", 999), at), sessions.Message{Role: sessions.RoleAssistant}); err != nil {
		t.Fatal(err)
	}
	read("new session")
}

// TestHistorySizesSeeReplacedBlocks: a message whose blocks are replaced
// in the slice weighed before (same position and count, other blocks) is
// weighed again; a message with no blocks weighs its overhead.
func TestHistorySizesSeeReplacedBlocks(t *testing.T) {
	msgs := []sessions.Message{user("a"), assistantText("b"), {Role: sessions.RoleAssistant}}
	h := &historySizes{}
	checkWeigh(t, "first", h, sessions.Context{Messages: msgs})
	msgs[0] = user(strings.Repeat("a", 400))
	msgs[1].Content = []sessions.Content{{Type: sessions.BlockText, Text: strings.Repeat("b", 400)}}
	checkWeigh(t, "replaced", h, sessions.Context{Messages: msgs})
	checkWeigh(t, "grown", h, sessions.Context{Messages: append(msgs, user("c"), user(""))})
	img := sessions.Content{Type: sessions.BlockImage, MimeType: "image/png", Data: "iVBORw0KGgo="}
	msgs[1].Content = []sessions.Content{msgs[1].Content[0], img}
	checkWeigh(t, "image added", h, sessions.Context{Messages: msgs})
	checkWeigh(t, "image left out", h, sessions.Context{Messages: msgs[2:]})
	msgs[1].Content = msgs[1].Content[:1]
	checkWeigh(t, "image cut off", h, sessions.Context{Messages: msgs})
}

// TestRunnerLeavesOutImagesWithoutAWalk: a model that takes no images is
// sent the note for an image in the history, on the turn that brought it
// and on later ones (the runner skips llm.WithoutImages only when the
// weighed history holds no image), and the image reaches a model that
// takes images.
func TestRunnerLeavesOutImagesWithoutAWalk(t *testing.T) {
	for _, vision := range []bool{false, true} {
		p := &fakeProvider{name: "fake"}
		var pr llm.Provider = p
		if vision {
			pr = visionProvider{p}
		}
		h := newHarnessWith(t, Defaults{}, []Agent{{ID: "main"}}, nil, map[string]llm.Provider{"fake": pr})
		k := h.key("main", "img")
		img := sessions.Content{Type: sessions.BlockImage, MimeType: "image/png", Data: "iVBORw0KGgo="}
		inputs := [][]sessions.Message{{user("before")},
			{{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: "look"}, img}, Timestamp: 1}},
			{user("after")}}
		for _, in := range inputs {
			if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: in}); err != nil {
				t.Fatal(err)
			}
		}
		for i, req := range p.requests()[1:] {
			var images, notes int
			for _, m := range req.Messages {
				if m.Role != sessions.RoleUser { // the fake's answers repeat the note
					continue
				}
				for _, c := range m.Content {
					images += btoi(c.Type == sessions.BlockImage)
					notes += btoi(strings.Contains(c.Text, llm.NoImagesNote))
				}
			}
			if vision && (images != 1 || notes != 0) || !vision && (images != 0 || notes != 1) {
				t.Fatalf("vision %v, request %d: %d images, %d notes", vision, i+2, images, notes)
			}
		}
	}
}

// visionProvider is a fakeProvider whose models take images.
type visionProvider struct{ *fakeProvider }

func (visionProvider) TakesImages(string) bool { return true }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRunnerWeighsAsAfresh runs one script of turns twice, with /compact
// in the middle and the session compacting on its own later: once with
// the memo kept between turns, once with it forgotten before each turn.
// Both must send the model the same requests and compact at the same
// points; a stale size moves a compaction or a prune.
func TestRunnerWeighsAsAfresh(t *testing.T) {
	script := func(forget bool) (reqs []string, sums int) {
		const window = 20000
		p := &fakeProvider{name: "fake"}
		p.reply = func(n int, req llm.Request) (sessions.Message, error) {
			return assistantText(fmt.Sprintf("answer %d %s", n, strings.Repeat("a", 300*(n%7)))), nil
		}
		k := openDisk(t, t.TempDir(), Defaults{ContextWindow: window, MaxHistoryShare: 0.4,
			Compaction: Compaction{ReserveTokens: 4000, KeepRecentTokens: 2000}}, []Agent{{ID: "main"}}, p)
		key, _ := routing.PeerKey("main", "telegram", "", routing.Direct, "42")
		k.begin("main", key)
		for i := range 40 {
			if i == 6 {
				if err := k.r.Compact(context.Background(), "main", key, ""); err != nil {
					t.Fatal(err)
				}
			}
			if forget {
				k.r.memos = memos{}
			}
			in := []sessions.Message{sessions.UserText(fmt.Sprintf("question %d %s", i, strings.Repeat("q", 400*(i%5))), time.Unix(int64(i), 0))}
			if i%4 == 3 { // two inputs: merged into one user message
				in = append(in, sessions.UserText(strings.Repeat("m", 900), time.Unix(int64(i), 0)))
			}
			if _, err := k.r.Run(context.Background(), Turn{AgentID: "main", Key: key, Inputs: in}); err != nil {
				t.Fatal(err)
			}
		}
		for _, req := range p.requests() {
			var b strings.Builder
			for _, m := range req.Messages {
				b.WriteString(m.Role + ":" + m.Text()[:min(len(m.Text()), 12)] + "|")
			}
			reqs = append(reqs, b.String())
		}
		return reqs, p.summaryRequests()
	}
	kept, keptSums := script(false)
	fresh, freshSums := script(true)
	if freshSums < 2 {
		t.Fatalf("%d summaries: the script does not compact on its own", freshSums)
	}
	if keptSums != freshSums || !slices.Equal(kept, fresh) {
		t.Fatalf("with the memo: %d summaries, requests\n%v\nafresh: %d summaries, requests\n%v", keptSums, kept, freshSums, fresh)
	}
}

// BenchmarkHistoryWeigh weighs the context of a session of history
// messages as each model call does: afresh (llm.EstimateMessages, as
// before the memo) and with the memo of the session's previous call.
func BenchmarkHistoryWeigh(b *testing.B) {
	for _, n := range []int{150, 500} {
		msgs := make([]sessions.Message, 0, n)
		for j := 0; len(msgs) < n; j++ {
			msgs = append(msgs, sessions.UserText(fmt.Sprintf("question %d: %s", j, strings.Repeat("how about this ", 5)), time.Now()),
				assistantText(fmt.Sprintf("answer %d: %s", j, strings.Repeat("well, it is so ", 6))))
		}
		b.Run(fmt.Sprintf("history=%d/afresh", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if llm.EstimateMessages(msgs) == 0 {
					b.Fatal("no estimate")
				}
			}
		})
		b.Run(fmt.Sprintf("history=%d/memo", n), func(b *testing.B) {
			h := &historySizes{}
			h.weigh(msgs)
			b.ReportAllocs()
			for b.Loop() {
				if h.weigh(msgs) == 0 {
					b.Fatal("no estimate")
				}
			}
		})
	}
}
