package web

import (
	"slices"
	"sync"
	"time"

	"github.com/gateway/gateway/channels"
)

// A turn's stream is kept in memory as a log (turnLog) from the moment its
// request is accepted until keepDone after its reply, so a client whose
// connection dropped reconnects to the same log and gets exactly the
// events it missed (resume.go). Events are numbered from 1 in the order
// they were logged; the event id a client sees is the turn id and that
// number. A log is written by the turn (Delta, Tool, Send) and read by
// any number of streams; writers never wait for readers.
const (
	// keepDone is how long a finished turn's log stays after its reply;
	// later, a reconnecting client gets the reply from the transcript.
	keepDone = 5 * time.Minute
	// keepOpen bounds a log whose turn never reported an end (its request
	// was dropped by a shutdown that lost nothing: the reply then comes
	// from durable state).
	keepOpen = time.Hour
	// maxLogs bounds the logs kept; finished ones go first.
	maxLogs = 4096
)

// turnLog is one turn's stream.
type turnLog struct {
	turn  turnID
	agent string // the agent the request was sent to; set once
	// sender is the sender identity of the request (Options.Identity;
	// "" without one); only the same sender may read the log.
	sender string
	// session is the session the request continued ("" for a new chat
	// and for a late log): a notice that ends the turn (a failure, /stop)
	// names no session, but the session is still there.
	session string
	created time.Time
	// late marks a log made for a reconnecting client after the turn began
	// in another process (a restart) or after its log was dropped: its
	// deltas are not the whole stream, so its readers are sent only the
	// final reply, whole.
	late bool

	mu      sync.Mutex
	events  []sseEvent         // guarded by mu; deltas and tool calls
	final   *channels.Outbound // guarded by mu; the reply or notice, once sent
	doneAt  time.Time          // guarded by mu; when final was set
	changed chan struct{}      // guarded by mu; closed and replaced on each change
}

func newTurnLog(t turnID, late bool, now time.Time) *turnLog {
	return &turnLog{turn: t, created: now, late: late, changed: make(chan struct{})}
}

// add appends ev unless the reply is already in.
func (l *turnLog) add(ev sseEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final != nil {
		return
	}
	l.events = append(l.events, ev)
	close(l.changed)
	l.changed = make(chan struct{})
}

// finish records the reply (the first one: a log ends once) and logs
// what the stream shows of it: a failure's error event, or the reply's
// text when none of it was streamed.
func (l *turnLog) finish(out channels.Outbound, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final != nil {
		return
	}
	if out.Failed && out.SessionID == "" {
		// A notice (the model failed, /stop): the final event names the
		// session the request was in, or the page takes the chat for one
		// whose session /delete ended and starts a new chat.
		out.SessionID = l.session
	}
	if out.Failed {
		l.events = append(l.events, sseEvent{name: "error", data: map[string]string{"message": out.Text}})
	} else if out.Text != "" && !slices.ContainsFunc(l.events, func(e sseEvent) bool { return e.text }) {
		l.events = append(l.events, sseEvent{name: "delta", data: map[string]string{"text": out.Text}, text: true})
	}
	if !out.Failed && len(out.Media) > 0 {
		l.events = append(l.events, sseEvent{name: "media", data: mediaData(out.Media)})
	}
	l.final, l.doneAt = &out, now
	close(l.changed)
	l.changed = make(chan struct{})
}

// read returns the events from index from on, the reply if it is in, and a
// channel closed at the next change.
func (l *turnLog) read(from int) ([]sseEvent, *channels.Outbound, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var evs []sseEvent
	if from < len(l.events) {
		evs = l.events[from:len(l.events):len(l.events)]
	}
	return evs, l.final, l.changed
}

// length is the number of events logged so far.
func (l *turnLog) length() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// expired reports whether the log may be dropped at now.
func (l *turnLog) expired(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final != nil {
		return now.Sub(l.doneAt) > keepDone
	}
	return now.Sub(l.created) > keepOpen
}

func (l *turnLog) finished() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.final != nil
}

// openLog returns the log of turn t to agent from sender, creating it
// (late as given, continuing session) when there is none; created says
// whether it did. It
// returns nil when the message id is logged for another conversation,
// agent or sender (a guessed or borrowed id must neither read nor displace
// the real turn's log).
func (a *Adapter) openLog(t turnID, agent, sender, session string, late bool) (l *turnLog, created bool) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if l := a.turns[t.msg]; l != nil {
		if l.turn != t || l.agent != agent || l.sender != sender {
			return nil, false
		}
		return l, false
	}
	a.sweepLocked(now)
	l = newTurnLog(t, late, now)
	l.agent, l.sender, l.session = agent, sender, session
	a.turns[t.msg] = l
	return l, true
}

// dropLog forgets l (a late log made for a turn that turned out unknown).
func (a *Adapter) dropLog(l *turnLog) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.turns[l.turn.msg] == l {
		delete(a.turns, l.turn.msg)
	}
}

// logOf returns the log of the turn with inbound message id msg, or nil.
func (a *Adapter) logOf(msg string) *turnLog {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.turns[msg]
}

// sweepLocked drops expired logs and, past maxLogs, finished ones oldest
// first. The caller holds a.mu.
func (a *Adapter) sweepLocked(now time.Time) {
	if len(a.turns) < maxLogs/2 {
		return
	}
	for k, l := range a.turns {
		if l.expired(now) {
			delete(a.turns, k)
		}
	}
	for len(a.turns) >= maxLogs {
		var oldest string
		var at time.Time
		for k, l := range a.turns {
			if !l.finished() {
				continue
			}
			if l.mu.Lock(); oldest == "" || l.doneAt.Before(at) {
				oldest, at = k, l.doneAt
			}
			l.mu.Unlock()
		}
		if oldest == "" {
			return // all in flight: each is a request being answered
		}
		delete(a.turns, oldest)
	}
}
