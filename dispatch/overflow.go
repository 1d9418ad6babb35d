package dispatch

import (
	"fmt"
	"strings"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/sessions"
)

// The queue's overflow (SPEC §4): the messages a lane dropped with a
// summary (drop=summarize past the cap, interrupt mode) are settled by the
// next turn of their session. They join that turn's work, marked
// Summarized, and reach the model as one note before its messages, the
// note carrying their record ids. So they are finished with that turn's
// reply like any of its messages, and a crash before it leaves them
// pending in the journal, to be answered in full after the restart:
// dropping a message never loses it. (They were finished at the drop,
// their summary kept only in memory: a crash lost them, 272 of 1,000 in
// one crash-test run at a cap of 50.)

// takeDropped moves b.Dropped into b's items: the dropped messages as one
// item before b's first message (at the end when b has none), so the turn
// that runs it carries their note; but before a command that changes the
// session (/new, /reset, /switch, /delete) coming first, since they were
// sent before it: their note is answered in the session they were sent
// to, not put into the next one. A dropped reply is resent and a dropped
// command or internal work finished (onDrop), as before: neither is
// summarised for the model.
func (d *Dispatcher) takeDropped(b laneBatch) laneBatch {
	if len(b.Dropped) == 0 {
		return b
	}
	var ws []*work
	for _, it := range b.Dropped {
		w, ok := it.Payload.(*work)
		switch {
		case !ok:
		case w.Reply != nil || w.Command != "" || w.Agent != nil:
			d.onDrop(b.Key, it)
		default:
			for _, p := range expand(w) {
				p.Summarized = true
				ws = append(ws, p)
			}
		}
	}
	at := b.Dropped[0].At
	b.Dropped = nil
	if len(ws) == 0 {
		return b
	}
	note := lanes.Item{ID: "overflow:" + ws[0].RecordID, Payload: bundle(ws), At: at,
		// Now part of a run: never dropped again, never steered.
		Keep: true, NoSteer: true}
	pos := len(b.Items)
	for i, it := range b.Items {
		if w, ok := it.Payload.(*work); ok && w.Reply == nil && (w.Command == "" || changesSession(w.Command)) {
			pos = i
			break
		}
	}
	items := make([]lanes.Item, 0, len(b.Items)+1)
	items = append(items, b.Items[:pos]...)
	items = append(items, note)
	b.Items = append(items, b.Items[pos:]...)
	return b
}

// overflowNote is the user message that stands for ws, messages the
// queue dropped (Summarized, not yet in the transcript): one line each,
// with their record ids so recovery knows them appended.
func (d *Dispatcher) overflowNote(ws []*work) sessions.Message {
	lines := make([]string, len(ws))
	for i, w := range ws {
		lines[i] = summaryLine(w)
	}
	m := sessions.UserText(fmt.Sprintf("[queue overflow: %d earlier messages were dropped]\n%s",
		len(ws), strings.Join(lines, "\n")), d.opts.Now())
	m.RecordIDs = recordIDs(ws)
	return m
}

// summaryLine is the one-line description of a message (its lane item's
// Summary, and its line in an overflow note).
func summaryLine(w *work) string {
	return w.In.SenderName + ": " + firstLine(w.In.Text, 80)
}

// steerBacklogNote is the user message of a steer-backlog follow-up turn
// for ws, messages an earlier run already took (they are in the
// transcript, before its reply): one line each, with their record ids, so
// the model answers them in a turn of their own and recovery knows them
// taken. Nothing is appended twice.
func (d *Dispatcher) steerBacklogNote(ws []*work) sessions.Message {
	lines := make([]string, len(ws))
	for i, w := range ws {
		lines[i] = summaryLine(w)
	}
	m := sessions.UserText(fmt.Sprintf("[follow-up: %d messages above reached you while you were answering; "+
		"answer them now, unless your last reply already did]\n%s", len(ws), strings.Join(lines, "\n")), d.opts.Now())
	m.RecordIDs = recordIDs(ws)
	return m
}

// changesSession reports whether command makes another session the
// chat's current one (what comes after it runs there).
func changesSession(command string) bool {
	switch command {
	case "new", "reset", "switch", "delete":
		return true
	}
	return false
}
