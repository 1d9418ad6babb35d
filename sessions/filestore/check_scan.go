package filestore

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// transcriptSummary is what one read of a transcript tells the checks.
type transcriptSummary struct {
	hdr         *summaryHeader // nil without a usable session line
	messages    int            // "message" entries, as transcript.File.Stats counts them
	compactions int
	firstUser   string // text of the first user message (the title)
	// firstOwn is the text of the first user message that came in to this
	// session (it carries journal record ids): the title when there is
	// one, since a forked thread's transcript starts with its parent's
	// messages, copied without record ids (sessions.ForkContext).
	firstOwn string
	lastAt   time.Time // latest entry timestamp
	modTime  time.Time // the file's mtime: its last write (CheckOptions.Settle)
	// Token counters as the runner adds them (agents appendAssistant):
	// the sums of the assistant messages' reported usage, and the context
	// of the last one (or the latest compaction's tokensAfter, when it
	// comes later). The summariser's own usage is not in the transcript.
	input, output, total, context int64
	model, provider               string    // of the last assistant message
	bad                           []BadLine // whole lines that do not parse (a torn last line is not one)
}

type summaryHeader struct {
	id, key, agent string
	at             time.Time
}

// summarizeTranscript reads the transcript at path once, forward, with no
// line-length limit, using the loader's own parsers (parseHeader,
// parseEntry), so the checks count what loading counts.
func summarizeTranscript(path string) (transcriptSummary, error) {
	var s transcriptSummary
	f, err := os.Open(path)
	if err != nil {
		return s, fmt.Errorf("transcript: scan: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		s.modTime = fi.ModTime()
	}
	err = eachLine(f, func(line int, off int64, b []byte, complete bool) {
		if perr := s.addLine(line, off, b); perr != nil && complete {
			s.bad = append(s.bad, BadLine{Line: line, Offset: off, Err: perr.Error()})
		}
		// An incomplete last line that does not parse is a torn append:
		// the next append cuts it, so it is neither counted nor reported.
	})
	if err != nil {
		return s, fmt.Errorf("transcript: scan %s: %w", path, err)
	}
	return s, nil
}

// addLine counts one line; it returns the parse error of a bad line.
func (s *transcriptSummary) addLine(line int, off int64, b []byte) error {
	var ts struct {
		Timestamp string `json:"timestamp"`
	}
	if line == 1 {
		h, err := transcript.ParseHeader(b)
		if err != nil {
			return err
		}
		_ = json.Unmarshal(b, &ts)
		s.hdr = &summaryHeader{id: h.ID, key: h.SessionKey, agent: h.AgentID, at: transcript.ParseTimestamp(ts.Timestamp)}
		return nil
	}
	n, err := transcript.ParseEntry(b, off)
	if err != nil || n == nil {
		return err
	}
	if json.Unmarshal(b, &ts) == nil {
		if t := transcript.ParseTimestamp(ts.Timestamp); t.After(s.lastAt) {
			s.lastAt = t
		}
	}
	switch {
	case n.IsMessage:
		s.messages++
		if m := n.Msg; m != nil && m.Role == sessions.RoleUser {
			if s.firstUser == "" {
				s.firstUser = m.Text()
			}
			if s.firstOwn == "" && len(m.RecordIDs) > 0 {
				s.firstOwn = m.Text()
			}
		}
		if m := n.Msg; m != nil && m.Role == sessions.RoleAssistant {
			if u := m.Usage; u != nil {
				s.input, s.output, s.total = s.input+u.Input, s.output+u.Output, s.total+u.TotalTokens
				s.context = u.Input + u.Output
			}
			if m.Model != "" {
				s.model, s.provider = m.Model, m.Provider
			}
		}
	case n.Kind == transcript.KindCompaction:
		s.compactions++
		var c struct {
			TokensAfter int64 `json:"tokensAfter"`
		}
		if json.Unmarshal(b, &c) == nil && c.TokensAfter > 0 {
			s.context = c.TokensAfter
		}
	}
	return nil
}

// badLineProblem reports the bad lines of one transcript; Repair moves
// them to <transcript>.quarantine.
func badLineProblem(agent, path string, bad []BadLine) sessions.Problem {
	lines := make([]string, 0, min(len(bad), 5))
	for _, b := range bad[:min(len(bad), 5)] {
		lines = append(lines, fmt.Sprintf("line %d (%s)", b.Line, b.Err))
	}
	p := sessions.Problem{Code: sessions.CodeTranscriptBadLine, Path: path, Agent: agent,
		Message: fmt.Sprintf("%d unreadable line(s), skipped when loading: %s", len(bad), strings.Join(lines, "; "))}
	if bad[len(bad)-1].Line == 1 {
		return p // only the header: quarantine never moves it, a human must look
	}
	p.Fixable = true
	p.Fix = "move them to " + filepath.Base(path) + quarantineExt + " and rewrite the transcript without them"
	p.Plan = repairPlan(func(ctx context.Context, r *repairer) error {
		_, err := QuarantineTranscript(path)
		return err
	})
	return p
}

// title is the text a rebuilt entry is titled by: the first message that
// came in to this session, else the first user message.
func (s *transcriptSummary) title() string {
	if s.firstOwn != "" {
		return s.firstOwn
	}
	return s.firstUser
}
