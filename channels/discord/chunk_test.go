package discord

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// checkParts verifies the invariants every split must keep.
func checkParts(t *testing.T, text string, limit int, parts []string) {
	t.Helper()
	for i, p := range parts {
		if n := textLen(p); n > limit {
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

func TestSplitShort(t *testing.T) {
	if got := Split("hello", 2000); !cmp.Equal(got, []string{"hello"}) {
		t.Fatalf("got %q", got)
	}
	if got := Split("\n \n", 2000); got != nil {
		t.Fatalf("blank text gave %q", got)
	}
	exact := strings.Repeat("a", 2000)
	if got := Split(exact, 2000); len(got) != 1 {
		t.Fatalf("2000 chars gave %d parts", len(got))
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
			parts := Split(string(b), limit)
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

func TestSplitLongLineAndWideRunes(t *testing.T) {
	tests := []struct {
		name string
		text string
	}{
		{"one long word", strings.Repeat("x", 4500)},
		{"words", strings.Repeat("lorem ipsum ", 400)},
		{"emoji count twice", strings.Repeat("😀", 1500)},
		{"long code block", "```go\n" + strings.Repeat("fmt.Println(\"hello\")\n", 300) + "```\ndone"},
		{"long line in code", "```\n" + strings.Repeat("y", 5000) + "\n```"},
		{"unterminated code", "intro\n```py\n" + strings.Repeat("print(1)\n", 400)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := Split(tt.text, MaxMessageLen)
			if len(parts) < 2 {
				t.Fatalf("got %d parts", len(parts))
			}
			checkParts(t, tt.text, MaxMessageLen, parts)
			if strings.Contains(tt.text, "```go") {
				for i, p := range parts[:len(parts)-1] {
					if !strings.HasPrefix(p, "```go") {
						t.Fatalf("part %d does not reopen the go block: %.20q", i, p)
					}
				}
			}
		})
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("hello\n```go\ncode\n```\nmore", 20)
	f.Add(strings.Repeat("ab ", 50), 7)
	f.Add("```\n```\n```x", 5)
	f.Add("```\n"+strings.Repeat("0", 1996)+"```0", MaxMessageLen) // a 2,004-character part before the fix
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 10 || limit > MaxMessageLen || strings.ToValidUTF8(text, "") != text {
			return
		}
		parts := Split(text, limit)
		got := 0
		for i, p := range parts {
			if n := textLen(p); n > limit {
				t.Fatalf("part %d is %d long, limit %d", i, n, limit)
			}
			got += visible(p)
		}
		// Nothing is dropped (reopened fences may add a language word).
		if want := visible(text); got < want {
			t.Fatalf("parts keep %d visible characters of %d", got, want)
		}
	})
}

// visible counts the runes of s that are neither white space nor backticks.
func visible(s string) int {
	n := 0
	for _, r := range s {
		if r != '`' && !unicode.IsSpace(r) {
			n++
		}
	}
	return n
}

func TestSplitFenceThenLongLineStaysWithinLimit(t *testing.T) {
	text := "```\n" + strings.Repeat("0", 1996) + "```0"
	parts := Split(text, MaxMessageLen)
	total := 0
	for i, p := range parts {
		if n := textLen(p); n > MaxMessageLen {
			t.Errorf("part %d is %d characters", i, n)
		}
		total += strings.Count(p, "0")
	}
	if total != 1997 {
		t.Errorf("parts hold %d zeros of 1997", total)
	}
}
