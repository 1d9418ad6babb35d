package telegram_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// chunkLimit is small so the golden files stay readable.
const chunkLimit = 200

const chunkSeparator = "\n----- 8< -----\n"

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func inputs(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs in testdata/%s: %v", dir, err)
	}
	return files
}

func TestFormatHTMLGolden(t *testing.T) {
	for _, in := range inputs(t, "format") {
		t.Run(filepath.Base(in), func(t *testing.T) {
			md, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			html := telegram.FormatHTML(string(md))
			if _, err := telegramtest.ParseHTML(html); err != nil {
				t.Errorf("output is not valid Telegram HTML: %v", err)
			}
			golden(t, strings.TrimSuffix(in, ".md")+".html", html)
		})
	}
}

func TestSplitMarkdownGolden(t *testing.T) {
	for _, in := range inputs(t, "chunk") {
		t.Run(filepath.Base(in), func(t *testing.T) {
			md, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			chunks := channels.SplitMarkdown(string(md), chunkLimit)
			var rendered []string
			for i, c := range chunks {
				if n := len(utf16(c)); n > chunkLimit {
					t.Errorf("chunk %d has %d UTF-16 units, limit %d", i, n, chunkLimit)
				}
				if !utf8.ValidString(c) {
					t.Errorf("chunk %d is not valid UTF-8", i)
				}
				if strings.Count(c, "```")%2 != 0 {
					t.Errorf("chunk %d has an unbalanced code fence:\n%s", i, c)
				}
				html := telegram.FormatHTML(c)
				if _, err := telegramtest.ParseHTML(html); err != nil {
					t.Errorf("chunk %d HTML invalid: %v", i, err)
				}
				rendered = append(rendered, html)
			}
			golden(t, strings.TrimSuffix(in, ".md")+".chunks", strings.Join(chunks, chunkSeparator)+"\n")
			golden(t, strings.TrimSuffix(in, ".md")+".html", strings.Join(rendered, chunkSeparator)+"\n")
		})
	}
}

func TestSplitMarkdownShortAndEmpty(t *testing.T) {
	if got := channels.SplitMarkdown("  \n ", 4096); got != nil {
		t.Errorf("blank text split into %q", got)
	}
	if got := channels.SplitMarkdown("short", 4096); len(got) != 1 || got[0] != "short" {
		t.Errorf("short text split into %q", got)
	}
}

func utf16(s string) []uint16 {
	var out []uint16
	for _, r := range s {
		if r >= 0x10000 {
			out = append(out, 0, 0)
		} else {
			out = append(out, 0)
		}
	}
	return out
}

func FuzzFormatAndSplit(f *testing.F) {
	for _, s := range []string{"**a** _b_ `c`", "```go\nx < y\n```", "[l](https://x)", "a\n\nb", "~~s~~ *i **b***"} {
		f.Add(s, 40)
	}
	f.Fuzz(func(t *testing.T, md string, limit int) {
		if !utf8.ValidString(md) || limit < 16 || limit > 5000 {
			return // outside the contract: nothing to check
		}
		if _, err := telegramtest.ParseHTML(telegram.FormatHTML(md)); err != nil {
			t.Fatalf("FormatHTML(%q) invalid: %v", md, err)
		}
		for i, c := range channels.SplitMarkdown(md, limit) {
			if n := len(utf16(c)); n > limit {
				t.Fatalf("chunk %d of %q: %d units > %d", i, md, n, limit)
			}
			if _, err := telegramtest.ParseHTML(telegram.FormatHTML(c)); err != nil {
				t.Fatalf("chunk %d of %q invalid HTML: %v", i, md, err)
			}
		}
	})
}
