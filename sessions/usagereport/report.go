package usagereport

import (
	"context"
	"time"

	"github.com/gateway/gateway/sessions"
)

// Report is a usage query's answer as the CLI (--json) and the HTTP API
// (GET /api/usage) print it.
type Report struct {
	Agent   string                 `json:"agent,omitempty"`
	By      string                 `json:"by"`
	Since   *time.Time             `json:"since,omitempty"`
	Buckets []sessions.UsageBucket `json:"buckets"`
	Total   sessions.UsageBucket   `json:"total"`
}

// Query queries l with f and sums the buckets.
func Query(ctx context.Context, l sessions.UsageLog, f sessions.UsageFilter) (Report, error) {
	bs, err := l.Query(ctx, f)
	if err != nil {
		return Report{}, err
	}
	if bs == nil {
		bs = []sessions.UsageBucket{}
	}
	r := Report{Agent: f.AgentID, By: f.By, Buckets: bs, Total: Total(bs)}
	if r.By == sessions.UsageByTotal {
		r.By = "total"
	}
	if !f.Since.IsZero() {
		s := f.Since.UTC()
		r.Since = &s
	}
	return r, nil
}

// Total sums buckets into one (Key "total").
func Total(bs []sessions.UsageBucket) sessions.UsageBucket {
	t := sessions.UsageBucket{Key: "total"}
	for _, b := range bs {
		t.Turns += b.Turns
		t.Input += b.Input
		t.Output += b.Output
		t.CacheRead += b.CacheRead
		t.CacheWrite += b.CacheWrite
		t.Cost += b.Cost
	}
	return t
}
