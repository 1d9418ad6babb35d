package dispatch

import (
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/limits"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// work is the payload of one lane item: the session it belongs to and one
// of three payloads — an inbound message or chat command (chatMessage),
// internal work from the agent runtime (Agent) or a stored reply sent
// again on the session's lane (Reply) — with, for journaled work, what is
// known of its record (recordState) and its place in a burst (burstLinks).
// A work is owned by the lane item that carries it: only the goroutine
// running that item (or the one that queues it) touches it.
type work struct {
	RecordID string // the journal record ("" for a resent reply)
	AgentID  string
	Key      routing.Key

	chatMessage
	// Agent is set for internal work (subagent runs, announcements).
	Agent *agentWork
	// Reply is set for an outbox reply resumed at start: it is sent on
	// the session's lane, before the work queued after it.
	Reply *sessions.Reply

	recordState
	burstLinks
}

// chatMessage is the inbound part of work: the message as its adapter
// gave it, the chat command it holds, and the room history it may see.
type chatMessage struct {
	In      channels.Inbound
	Command string // chat command name without '/', "" for a message
	Args    string // command arguments
	// AdmittedBy is the runtime whose access policy admitted it in Handle
	// (nil for replayed work and jobs): while that runtime is in force, the
	// second look before it reaches the agent has nothing to ask
	// (revoked.go).
	AdmittedBy *Runtime
	// HistoryMark is the room history sequence when it was accepted: its
	// turn takes the room's kept messages up to it (roomhistory.go).
	HistoryMark uint64
	// Summarized is set for a message the lane dropped (queue overflow,
	// interrupt mode): its turn gives it to the model as a line of the
	// overflow note (overflow.go), not in full.
	Summarized bool
	// Steered is set for a message a run took while active in
	// steer-backlog mode (its user message is in the transcript, before
	// that run's reply) and that came back for a turn of its own: that
	// turn gives it to the model as a line of the follow-up note
	// (steerBacklogNote), not again in full.
	Steered bool
}

// recordState is what is known of a journaled work's record: when it was
// accepted, how its earlier turns went, and what the session's transcript
// already holds of it (set by recovery, recover).
type recordState struct {
	AcceptedAt time.Time // when the journal accepted it
	Failures   int       // failed turns so far
	// Replayed is set for work journaled before a restart (or requeued
	// after a failure): the transcript may already hold part of its turn.
	Replayed bool
	// Hold is the budget hold its check took (limits.Decision.Hold): its
	// turn's charge drops it, and so does any end without a turn.
	Hold string
	// Rated is its limits check's decision: the rate tokens it took are
	// given back when it is not accepted (Limiter.Refund).
	Rated    limits.Decision
	Consumed bool // the user message is already in the transcript
	Reuse    bool // its turn's reply is in the transcript (agents.Turn.Reuse)
}

// burstLinks place a message in an inbound burst (burst.go): Joined are
// the next parts of a burst this work leads; Prev is the previous part's
// record id and Glue what joins this part's text to it.
type burstLinks struct {
	Joined []*work
	Prev   string
	Glue   string
}

// agentWork is an internal message from the agent runtime.
type agentWork struct {
	AgentID  string `json:"agentId"`
	Key      string `json:"key"`
	Subagent bool   `json:"subagent"`
	// Parent is the session that spawned a subagent ("" for other work,
	// and in records journaled before it was kept).
	Parent  string           `json:"parent,omitempty"`
	Message sessions.Message `json:"message"`
	Deliver bool             `json:"deliver"`
}

// envelope is the journal payload.
type envelope struct {
	Inbound *channels.Inbound `json:"inbound,omitempty"`
	Agent   *agentWork        `json:"agent,omitempty"`
	History uint64            `json:"history,omitempty"` // work.HistoryMark
}

func recordIDs(ws []*work) []string {
	ids := make([]string, 0, len(ws))
	for _, w := range ws {
		if w.RecordID != "" {
			ids = append(ids, w.RecordID)
		}
	}
	return ids
}

// answers are the inbound message ids a reply to ws answers.
func answers(ws []*work) []string {
	var ids []string
	for _, w := range ws {
		if w.Agent == nil && w.In.MessageID != "" {
			ids = append(ids, w.In.MessageID)
		}
	}
	return ids
}
