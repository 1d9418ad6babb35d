package discord

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/channels"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The splitter itself is channels.SplitMarkdown, tested and fuzzed there;
// these tests pin what Discord gets from it.

const fenceMark = "```"

// checkParts verifies the invariants every split must keep.
func checkParts(t *testing.T, text string, limit int, parts []string) {
	t.Helper()
	for i, p := range parts {
		if n := channels.UTF16Len(p); n > limit {
			t.Fatalf("part %d is %d long, limit %d", i, n, limit)
		}
		if strings.TrimSpace(p) == "" {
			t.Fatalf("part %d is empty", i)
		}
		if strings.Count(p, fenceMark)%2 != 0 {
			t.Fatalf("part %d leaves a code block open:\n%s", i, p)
		}
	}
	// Without fence lines and white space, the parts hold the original text.
	var got strings.Builder
	for _, p := range parts {
		got.WriteString(squash(p))
	}
	if want := squash(text); got.String() != want {
		t.Fatalf("content changed:\n got %q\nwant %q", got.String(), want)
	}
}

// squash drops fence lines and all white space.
func squash(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), fenceMark) {
			continue
		}
		b.WriteString(strings.Join(strings.Fields(l), ""))
	}
	return b.String()
}

func TestChunksShort(t *testing.T) {
	a := &Adapter{}
	if got := a.Chunks(channels.Outbound{Text: "hello"}); !cmp.Equal(got, []string{"hello"}) {
		t.Fatalf("got %q", got)
	}
	if got := a.Chunks(channels.Outbound{Text: "\n \n"}); got != nil {
		t.Fatalf("blank text gave %q", got)
	}
	exact := strings.Repeat("a", MaxMessageLen)
	if got := a.Chunks(channels.Outbound{Text: exact}); len(got) != 1 {
		t.Fatalf("%d chars gave %d parts", MaxMessageLen, len(got))
	}
	emoji := strings.Repeat("😀", MaxMessageLen/2+1) // counted as two each
	got := a.Chunks(channels.Outbound{Text: emoji})
	checkParts(t, emoji, MaxMessageLen, got)
	if len(got) != 2 {
		t.Fatalf("%d wide runes gave %d parts", MaxMessageLen/2+1, len(got))
	}
}

func TestSplitGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/split_*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			b, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			const limit = 120
			parts := channels.SplitMarkdown(string(b), limit)
			checkParts(t, string(b), limit, parts)
			got := strings.Join(parts, "\n=====\n") + "\n"
			golden := strings.TrimSuffix(in, ".md") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Fatalf("split (-want +got):\n%s", diff)
			}
		})
	}
}
