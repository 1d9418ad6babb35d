package sessions

import (
	"context"
	"time"
)

// UsageReport is a usage query's answer as the CLI (--json) and the HTTP
// API (GET /api/usage) print it.
type UsageReport struct {
	Agent   string        `json:"agent,omitempty"`
	By      string        `json:"by"`
	Since   *time.Time    `json:"since,omitempty"`
	Buckets []UsageBucket `json:"buckets"`
	Total   UsageBucket   `json:"total"`
}

// ReportUsage queries l with f and sums the buckets.
func ReportUsage(ctx context.Context, l UsageLog, f UsageFilter) (UsageReport, error) {
	bs, err := l.Query(ctx, f)
	if err != nil {
		return UsageReport{}, err
	}
	if bs == nil {
		bs = []UsageBucket{}
	}
	r := UsageReport{Agent: f.AgentID, By: f.By, Buckets: bs, Total: UsageTotal(bs)}
	if r.By == UsageByTotal {
		r.By = "total"
	}
	if !f.Since.IsZero() {
		s := f.Since.UTC()
		r.Since = &s
	}
	return r, nil
}
