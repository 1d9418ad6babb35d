package filestore

import (
	"context"
	"github.com/gateway/gateway/sessions/transcript"
	"os"
	"strings"
	"testing"
)

// TestBadEntryLineSkippedReportedQuarantined: a bad whole line in the middle
// of a transcript (outside damage) no longer bricks the session: it is
// skipped, turns go on, ScanTranscript names its line, and
// QuarantineTranscript moves it aside without losing it.
func TestBadEntryLineSkippedReportedQuarantined(t *testing.T) {
	ctx := context.Background()
	a := `{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"x","message":{"role":"user","content":"a","timestamp":1}}`
	b := `{"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":"x","message":{"role":"assistant","content":[{"type":"text","text":"b"}],"timestamp":2}}`
	tests := []struct {
		name, bad string
		after     bool // the bad line comes after both good ones
	}{
		{"not json", "not json", false},
		{"entry without id", `{"type":"message","parentId":null,"message":{"role":"user","content":"a","timestamp":1}}`, false},
		{"wrong content type", `{"type":"message","id":"aaaa0009","parentId":null,"message":{"role":"user","content":5,"timestamp":1}}`, false},
		{"bad terminated last line", "{oops", true},
	}
	hdr := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t)
			lines := []string{hdr, a, tt.bad, b}
			if tt.after {
				lines = []string{hdr, a, b, tt.bad}
			}
			content := strings.Join(lines, "\n") + "\n"
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := newTestTranscript(t, path, newMemLocker(), nil).Context(ctx)
			if err != nil {
				t.Fatalf("Context: %v", err)
			}
			if len(c.Messages) != 2 || c.Messages[1].Text() != "b" {
				t.Fatalf("context %+v", c.Messages)
			}
			bad, err := ScanTranscript(path)
			wantLine := 3
			if tt.after {
				wantLine = 4
			}
			if err != nil || len(bad) != 1 || bad[0].Line != wantLine {
				t.Fatalf("scan %+v %v, want line %d", bad, err, wantLine)
			}
			if _, err := newTestTranscript(t, path, newMemLocker(), nil).Append(ctx, user("x")); err != nil {
				t.Fatalf("Append beside a bad line: %v", err)
			}
			n, err := QuarantineTranscript(path)
			if err != nil || n != 1 {
				t.Fatalf("quarantine moved %d (%v)", n, err)
			}
			if q, _ := os.ReadFile(path + ".quarantine"); string(q) != tt.bad+"\n" {
				t.Errorf("quarantine holds %q", q)
			}
			if bad, _ := ScanTranscript(path); len(bad) != 0 {
				t.Errorf("after quarantine: %+v", bad)
			}
			c, err = transcript.LoadFile(path, nil)
			if err != nil || len(c.Messages) != 3 || c.Messages[1].Text() != "b" || c.Messages[2].Text() != "x" {
				t.Fatalf("after quarantine: %+v %v", c.Messages, err)
			}
		})
	}
}
