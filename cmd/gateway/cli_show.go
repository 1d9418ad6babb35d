package main

import (
	"context"
	"fmt"

	"github.com/gateway/gateway/sessions"
)

// sessionView is what `sessions show KEY --json` prints; `storage migrate`
// renders it on both backends to verify a copy.
type sessionView struct {
	AgentID  string             `json:"agentId"`
	Messages []sessions.Message `json:"messages"`
	Session  sessions.Entry     `json:"session"`
	// Summary is the latest compaction summary (with --context only).
	Summary *string `json:"summary,omitempty"`
}

// showSession reads what `sessions show` prints for the session e of
// agentID from its transcript t: the rebuilt model context (withContext)
// or the whole history.
func showSession(ctx context.Context, agentID string, e sessions.Entry, t sessions.TranscriptLog, withContext bool) (sessionView, error) {
	v := sessionView{AgentID: agentID, Session: e}
	if withContext {
		cx, err := t.Context(ctx)
		if err != nil {
			return v, fmt.Errorf("sessions show: context: %w", err)
		}
		v.Messages, v.Summary = cx.Messages, &cx.Summary
	} else {
		msgs, err := t.History(ctx)
		if err != nil {
			return v, fmt.Errorf("sessions show: history: %w", err)
		}
		v.Messages = msgs
	}
	if v.Messages == nil {
		v.Messages = []sessions.Message{}
	}
	return v, nil
}
