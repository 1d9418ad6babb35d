package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// archive handles /sessions, /switch, /history and /delete. They act
// only on sessions of this chat's key, so one chat never reaches another's.
// /sessions numbers the archived sessions the chat may switch to (1 is the
// newest); /switch n and /delete n take those numbers, and /delete without
// a number (or 0) deletes the current session. A deleted session leaves the
// chat's list; it is kept for an operator (sessions.Index.DeleteArchived).
func (c commander) archive(ctx context.Context, store sessions.AgentStore, w *work) string {
	d := c.d
	log := d.log.With(zap.Stringer("session_key", w.Key), zap.String("command", w.Command))
	cur, hasCur, err := store.Get(w.Key)
	if err != nil {
		log.Error("session lookup failed", zap.Error(err))
		return "Sorry, the session store is unavailable."
	}
	all, err := store.Archived(w.Key)
	if err != nil {
		log.Error("archive lookup failed", zap.Error(err))
		return "Sorry, the session archive is unavailable."
	}
	archived := chatArchived(all)
	switch w.Command {
	case "sessions":
		return listSessions(cur, hasCur, archived)
	case "switch":
		if w.Args == "" {
			return "Usage: /switch <n|sessionId> (see /sessions)"
		}
		id, msg := pickArchived(w.Args, archived, all)
		if msg != "" {
			return msg
		}
		e, err := store.Switch(ctx, w.Key, id)
		if errors.Is(err, sessions.ErrNotFound) {
			return "This chat has no archived session " + id + "."
		}
		if err != nil {
			log.Error("switch failed", zap.Error(err))
			return "Sorry, the session could not be switched."
		}
		text := fmt.Sprintf("Switched to session %s (%s).", e.SessionID, orDash(e.Title))
		if hasCur && e.SessionID == cur.SessionID { // its own id: the chat stays where it was
			return text
		}
		return text + c.childrenStopped(ctx, w)
	case "history":
		n := 10
		if w.Args != "" {
			v, err := strconv.Atoi(w.Args)
			if err != nil || v < 1 || v > 100 {
				return "Usage: /history [n] with n from 1 to 100"
			}
			n = v
		}
		if !hasCur {
			return "This chat has no messages yet."
		}
		return c.history(ctx, store, cur, n)
	case "delete":
		if w.Args != "" && w.Args != "0" && (!hasCur || w.Args != cur.SessionID) {
			id, msg := pickArchived(w.Args, archived, all)
			if msg != "" {
				return msg
			}
			if err := store.DeleteArchived(ctx, w.Key, id); errors.Is(err, sessions.ErrNotFound) {
				return "This chat has no archived session " + id + "."
			} else if err != nil {
				log.Error("delete archived failed", zap.Error(err))
				return "Sorry, the session could not be deleted."
			}
			return "Deleted archived session " + id + " (an operator can recover it). /sessions renumbers the rest."
		}
		if !hasCur {
			return "This chat has no session to delete."
		}
		if err := store.Delete(ctx, w.Key); err != nil {
			log.Error("delete failed", zap.Error(err))
			return "Sorry, the session could not be deleted."
		}
		// Its settings went with its entry: the room's rule answers now.
		d.activations.forget(w.Key)
		return "Deleted the current session (archived; an operator can recover it). The next message starts a new one." + c.childrenStopped(ctx, w)
	}
	return "Unknown command. /help lists them."
}

// childrenStopped stops the subagents of the session /switch or /delete
// just moved the chat away from, as /new does (their results would
// arrive, unasked, into the session the chat is in now), and says how
// many were stopped ("" for none).
func (c commander) childrenStopped(ctx context.Context, w *work) string {
	if n := c.stopChildren(ctx, w.Key, nil); n > 0 {
		return fmt.Sprintf(" %d subagent(s) of the previous session stopped.", n)
	}
	return ""
}

func listSessions(cur sessions.Entry, hasCur bool, archived []sessions.Archived) string {
	var b strings.Builder
	if hasCur {
		fmt.Fprintf(&b, "Current: %s %q, %d messages, started %s\n", cur.SessionID, cur.Title,
			cur.MessageCount, cur.SessionStartedAt.Format("2006-01-02 15:04"))
	} else {
		b.WriteString("No current session.\n")
	}
	if len(archived) == 0 {
		b.WriteString("No archived sessions.")
		return b.String()
	}
	b.WriteString("Archived (use /switch <n>):\n")
	for i, a := range archived {
		fmt.Fprintf(&b, "%d. %s %q, %d messages, %s %s\n", i+1, a.SessionID, a.Title, a.MessageCount,
			a.Reason, a.ArchivedAt.Format("2006-01-02 15:04"))
	}
	return strings.TrimRight(b.String(), "\n")
}

func (c commander) history(ctx context.Context, store sessions.AgentStore, e sessions.Entry, n int) string {
	d := c.d
	t, err := store.TranscriptOf(e)
	if err != nil {
		return "Sorry, the transcript is unavailable."
	}
	msgs, err := t.History(ctx)
	if err != nil {
		d.log.Error("read history failed", zap.String("session_id", e.SessionID), zap.Error(err))
		return "Sorry, the transcript could not be read."
	}
	var lines []string
	for _, m := range msgs {
		if m.Role != sessions.RoleUser && m.Role != sessions.RoleAssistant {
			continue
		}
		txt := firstLine(m.Text(), 200)
		if txt == "" {
			continue
		}
		lines = append(lines, m.Role+": "+txt)
	}
	if len(lines) == 0 {
		return "No messages yet."
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// chatArchived is the part of a key's archive the chat is offered: the
// sessions not deleted, newest first.
func chatArchived(all []sessions.Archived) []sessions.Archived {
	var out []sessions.Archived
	for _, a := range all {
		if !a.Deleted {
			out = append(out, a)
		}
	}
	return out
}

// pickArchived resolves /switch's and /delete's argument, a number from
// /sessions or a session id, to an archived session of the chat; msg is the
// reply when it names none.
func pickArchived(arg string, archived, all []sessions.Archived) (id, msg string) {
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > len(archived) {
			return "", fmt.Sprintf("No archived session %d; /sessions lists %d.", n, len(archived))
		}
		return archived[n-1].SessionID, ""
	}
	for _, a := range all {
		if a.SessionID == arg && a.Deleted {
			return "", "Session " + arg + " was deleted; an operator can recover it."
		}
	}
	return arg, ""
}
