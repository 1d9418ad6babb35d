package dispatch

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/usagereport"
)

// usage is /usage's answer: the tokens and cost of the chat's current
// session (its ledger rows since the session started) and the sender's
// rows of today (since midnight in the daemon's time zone), all agents.
func (c commander) usage(ctx context.Context, store sessions.AgentStore, w *work) string {
	d := c.d
	ledger := d.opts.Sessions.Usage()
	var lines []string
	e, ok, err := store.Get(w.Key)
	if err == nil && ok {
		bs, err := ledger.Query(ctx, sessions.UsageFilter{AgentID: w.AgentID, SessionKey: w.Key.String(), Since: e.SessionStartedAt})
		if err != nil {
			d.log.Warn("usage query failed", zap.Stringer("session_key", w.Key), zap.Error(err))
			return "Sorry, usage is unavailable right now."
		}
		lines = append(lines, "This session: "+usageLine(usagereport.Total(bs)))
	} else {
		lines = append(lines, "This session: no turns yet.")
	}
	if w.In.SenderID != "" && w.In.Channel != "" {
		now := d.opts.Now()
		midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
		bs, err := ledger.Query(ctx, sessions.UsageFilter{Channel: w.In.Channel, SenderID: w.In.SenderID, Since: midnight})
		if err != nil {
			d.log.Warn("usage query failed", zap.Stringer("session_key", w.Key), zap.Error(err))
			return "Sorry, usage is unavailable right now."
		}
		lines = append(lines, fmt.Sprintf("You today (since 00:00 %s): %s", midnight.Format("MST"), usageLine(usagereport.Total(bs))))
	}
	return strings.Join(lines, "\n")
}

// usageLine is one bucket in a chat line: "3 turns, 12,400 tokens (in
// 10,000, out 2,000, cache 400), $0.0123".
func usageLine(b sessions.UsageBucket) string {
	if b.Turns == 0 {
		return "no turns yet."
	}
	turns := "turns"
	if b.Turns == 1 {
		turns = "turn"
	}
	return fmt.Sprintf("%d %s, %s tokens (in %s, out %s, cache %s), %s", b.Turns, turns,
		thousands(b.Tokens()), thousands(b.Input), thousands(b.Output), thousands(b.CacheRead+b.CacheWrite), usd(b.Cost))
}

// thousands writes n with comma separators: 12345 -> "12,345".
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// usd writes a cost in dollars: 4 decimals below $1 (turns cost fractions
// of a cent), else 2.
func usd(v float64) string {
	if v < 1 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}
