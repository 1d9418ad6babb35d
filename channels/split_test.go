package channels

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// checkSplit verifies the contract of SplitMarkdown on parts = splitParts(text, limit):
//
//  1. every part is at most max(limit, MinSplitLimit) UTF-16 units and not blank;
//  2. a part is [reopen "\n"] body ["\n" close], where reopen is a fence line
//     (only after a part that ended inside a block) and close a fence marker;
//  3. the bodies, in order, are the input with its leading blank lines and
//     trailing white space trimmed, separated only by the white space dropped
//     at each cut: trim(text) = ws0 + body1 + ws1 + ... + bodyN, where each
//     ws is white space (ws0 only when indentation did not fit a part);
//  4. text within the limit is one part, unchanged but for the trim;
//  5. in a split, every part not cut hard ends outside any code block (each
//     part parsed on its own, as a client renders it).
func checkSplit(t *testing.T, text string, limit int, parts []part) {
	t.Helper()
	want, lim := trimText(text), max(limit, MinSplitLimit)
	if want == "" {
		if parts != nil {
			t.Fatalf("blank text gave %q", parts)
		}
		return
	}
	if UTF16Len(want) <= lim && (len(parts) != 1 || parts[0].String() != want) {
		t.Fatalf("text within the limit gave %q", parts)
	}
	pos := 0
	for i, p := range parts {
		s := p.String()
		if n := UTF16Len(s); n > lim {
			t.Fatalf("part %d is %d long, limit %d:\n%s", i, n, lim, s)
		}
		if isBlank(s) {
			t.Fatalf("part %d is blank", i)
		}
		if p.reopen != "" {
			if _, _, ok := ParseFence(p.reopen); !ok || i == 0 {
				t.Fatalf("part %d reopens with %q", i, p.reopen)
			}
		}
		if p.close != "" && (len(p.close) < 3 || strings.Trim(p.close, p.close[:1]) != "" || !strings.ContainsAny(p.close[:1], "`~")) {
			t.Fatalf("part %d closes with %q", i, p.close)
		}
		{ // skip the white space dropped at the cut (a body may start indented)
			gap := leadingSpace(want[pos:]) - leadingSpace(p.body)
			if gap < 0 {
				t.Fatalf("part %d body %q starts with white space not in the text", i, p.body)
			}
			pos += gap
		}
		if !strings.HasPrefix(want[pos:], p.body) || (i > 0 && p.body == "") {
			t.Fatalf("part %d body %q is not the text at byte %d: %.40q", i, p.body, pos, want[pos:])
		}
		pos += len(p.body)
		if len(parts) > 1 && !p.hard {
			var st fenceState
			if st.scan(s); st.marker != "" {
				t.Fatalf("part %d ends inside a code block:\n%s", i, s)
			}
		}
	}
	if pos != len(want) {
		t.Fatalf("parts stop at byte %d of %d: %q dropped", pos, len(want), want[pos:])
	}
}

func leadingSpace(s string) int { return len(s) - len(strings.TrimLeftFunc(s, unicode.IsSpace)) }

// roomyFences reports whether every line of text with a fence marker in it
// ("```", "~~~") leaves room in a part for a closing fence and some code,
// so that no part is cut hard: it is a fence line, or may become one
// where a cut leaves its marker at the start of a part.
func roomyFences(text string, limit int) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "```") || strings.Contains(l, "~~~") {
			// Indentation counts: the first line of a part keeps it.
			if 2*UTF16Len(strings.TrimRightFunc(l, unicode.IsSpace))+6 > max(limit, MinSplitLimit) {
				return false
			}
		}
	}
	return true
}

func TestSplitMarkdownShort(t *testing.T) {
	if got := SplitMarkdown("hello", 2000); !cmp.Equal(got, []string{"hello"}) {
		t.Fatalf("got %q", got)
	}
	for _, blank := range []string{"", "\n \n", " \t "} {
		if got := SplitMarkdown(blank, 2000); got != nil {
			t.Fatalf("blank text %q gave %q", blank, got)
		}
	}
	if got := SplitMarkdown("\n\n  indented\n\n", 2000); !cmp.Equal(got, []string{"  indented"}) {
		t.Fatalf("leading blank lines: got %q", got)
	}
	exact := strings.Repeat("a", 2000)
	if got := SplitMarkdown(exact, 2000); len(got) != 1 {
		t.Fatalf("2000 chars gave %d parts", len(got))
	}
}

func TestSplitMarkdownCases(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		limit int
		want  []string // nil: only the contract is checked
	}{
		{"one long word", strings.Repeat("x", 4500), 2000, nil},
		{"words", strings.Repeat("lorem ipsum ", 400), 2000, nil},
		{"emoji count twice", strings.Repeat("😀", 1500), 2000, nil},
		{"long code block", "```go\n" + strings.Repeat("fmt.Println(\"hello\")\n", 300) + "```\ndone", 2000, nil},
		{"long line in code", "```\n" + strings.Repeat("y", 5000) + "\n```", 2000, nil},
		{"unterminated code", "intro\n```py\n" + strings.Repeat("print(1)\n", 400), 2000, nil},
		{"fence then long line", "```\n" + strings.Repeat("0", 1996) + "```0", 2000, nil},
		{"paragraph first", "aaaa bbbb\n\ncccc dddd eeee", 20, []string{"aaaa bbbb", "cccc dddd eeee"}},
		{"line before space", "aaaa bbbb\ncccc dddd eeee", 20, []string{"aaaa bbbb", "cccc dddd eeee"}},
		{"space", "aaaa bbbb cccc dddd", 12, []string{"aaaa bbbb", "cccc dddd"}},
		{"anywhere", "abcdefghijklmnop", 10, []string{"abcdefghij", "klmnop"}},
		{"wide runes whole", "😀😀😀😀😀😀", 11, []string{"😀😀😀😀😀", "😀"}},
		{"block reopened with its language", "```go\na := 1\nb := 2\n```", 20,
			[]string{"```go\na := 1\n```", "```go\nb := 2\n```"}},
		{"empty block moves on", "some text here\n```go\ncode line\n```", 22,
			[]string{"some text here", "```go\ncode line\n```"}},
		{"closing fence comes along", "```\nabcdef\n```\nxyz", 14, []string{"```\nabcdef\n```", "xyz"}},
		{"no fence made from a line", "aaaaaaaa ```x", 10, []string{"aaaaaaaa `", "``x"}},
		{"tilde fence", "~~~~\n" + strings.Repeat("x\n", 10) + "~~~~", 16, nil},
		{"indented line keeps its indent", "aaaaaaaaaa\n    bbbbbbbb", 15, []string{"aaaaaaaaaa", "    bbbbbbbb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := splitParts(tt.text, tt.limit)
			checkSplit(t, tt.text, tt.limit, parts)
			if len(parts) < 2 {
				t.Fatalf("got %d parts", len(parts))
			}
			for i, p := range parts {
				if p.hard {
					t.Errorf("part %d cut hard", i)
				}
			}
			got := SplitMarkdown(tt.text, tt.limit)
			if tt.want != nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Fatalf("parts (-want +got):\n%s", diff)
				}
			}
			if strings.Contains(tt.text, "```go\n") {
				for i, p := range got {
					if !strings.HasPrefix(p, "```go") && strings.Contains(p, "```") {
						t.Errorf("part %d does not reopen the go block: %.20q", i, p)
					}
				}
			}
		})
	}
}

// FuzzSplitMarkdown checks the contract (see checkSplit) on any valid
// UTF-8 text and limit; no part may be cut hard unless a fence line leaves
// no room (roomyFences). The corpus holds Discord's and Telegram's saved
// inputs.
func FuzzSplitMarkdown(f *testing.F) {
	f.Add("hello\n```go\ncode\n```\nmore", 20)
	f.Add(strings.Repeat("ab ", 50), 7)
	f.Add("```\n```\n```x", 5)
	f.Add("```\n"+strings.Repeat("0", 1996)+"```0", 2000)
	f.Add("**a** _b_ `c`\n\n```go\nx < y\n```\n[l](https://x)", 16)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit > 5000 || !utf8.ValidString(text) {
			return
		}
		parts := splitParts(text, limit)
		checkSplit(t, text, limit, parts)
		if roomyFences(text, limit) {
			for i, p := range parts {
				if p.hard {
					t.Fatalf("part %d of %q cut hard at limit %d: %q", i, text, limit, p)
				}
			}
		}
	})
}
