package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// ErrStorage is wrapped by ForSession's error when the session could not
// be read: no fault of the request (the API answers 500, not 400).
var ErrStorage = errors.New("storage")

// ForSession builds the job the operator asks for (`gateway jobs add`,
// POST /api/jobs): whenAndText as /remind reads it, delivered into the
// session of sessionKey, whose room is the chat that session last heard
// from (its entry's lastChannel, lastAccountId, lastTo, lastThreadId).
// The job has no sender: the operator set it. zone reads times of day.
func ForSession(ctx context.Context, b sessions.Backend, sessionKey, whenAndText string, zone func(agentID string) *time.Location, now time.Time) (sessions.Job, error) {
	sessionKey = strings.TrimSpace(sessionKey) // pasted from a list, as the filters read it
	key, err := routing.Parse(sessionKey)
	if err != nil {
		return sessions.Job{}, fmt.Errorf("session key %q: %w", sessionKey, err)
	}
	st, err := b.Store(key.Agent)
	if err != nil {
		return sessions.Job{}, fmt.Errorf("agent %s: %w", key.Agent, err)
	}
	e, ok, err := st.Get(key)
	if err != nil {
		return sessions.Job{}, fmt.Errorf("session %s: %w: %w", sessionKey, ErrStorage, err)
	}
	if !ok {
		return sessions.Job{}, fmt.Errorf("no session %s (`gateway sessions list` shows them)", sessionKey)
	}
	if e.LastChannel == "" || e.LastTo == "" {
		return sessions.Job{}, fmt.Errorf("session %s has no chat to deliver into (no message from a chat reached it yet)", sessionKey)
	}
	loc := time.UTC
	if zone != nil {
		if z := zone(key.Agent); z != nil {
			loc = z
		}
	}
	sched, text, err := ParseWhen(whenAndText, now, loc)
	if err != nil {
		return sessions.Job{}, err
	}
	target := sessions.JobTarget{Channel: e.LastChannel, AccountID: e.LastAccountID, ChatID: e.LastTo, ChatType: e.ChatType,
		ThreadID: e.LastThreadID, IsTopic: key.ThreadKind == routing.Topic}
	return NewJob(Spec{AgentID: key.Agent, SessionKey: key.String(), Target: target, Text: text, Schedule: sched}, now)
}
