package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// What the multi-replica test checks once the traffic is answered: the
// fake Telegram's record (lost, answered twice, order, chunks sent twice
// and whether the documented window explains them) and the transcripts.

// replicaChatID is the Telegram chat (a DM: one session) of test chat c.
func replicaChatID(c int) int64 { return int64(6000 + c) }

// replicaFaults are the signals the test sent, by run tag.
type replicaFaults struct {
	killed  map[string]bool // runs SIGKILLed
	stopped string          // the run SIGSTOPped
	contAt  time.Time       // when it was continued
}

// replyReport is what the fake Telegram's record says.
type replyReport struct {
	replies  int                      // distinct replies delivered
	inWindow int                      // extra copies of a chunk the window explains
	lost     []string                 // inputs no reply answers
	twice    []string                 // inputs answered by two different replies
	outside  []string                 // chunks delivered twice outside the window
	order    []string                 // replies of a chat answering out of order
	notices  []string                 // anything else sent to the test chats
	latency  map[string]time.Duration // input -> queued to its first reply
}

// replicaReply is one delivered reply chunk of the fake model's format.
type replicaReply struct {
	idx  int // in Sent
	chat int
	ns   []int
	text string
}

// checkReplies reads the fake Telegram's record. sentPer[c] is how many
// messages chat c sent (n1..n<count>), sentAt[c][n] when message n was
// queued.
//
// The documented window (SPEC §3.7): a chunk reaches a chat twice only if
// the process that delivered it died or stopped between Telegram
// accepting the chunk and the write of its mark, so that another replica,
// finding it unmarked, delivers it again — or if a stopped replica was
// frozen between its last lease check and the send, and sends once it
// wakes what another replica delivered meanwhile. So an extra copy is
// tolerated only if one of the two copies is, for its chat, the last
// chunk a SIGKILLed run delivered, the last chunk the SIGSTOPped run
// delivered before it was continued, or the first it delivered after.
// Nothing else (a message answered by two different replies, a chunk sent
// twice by live replicas) is tolerated.
func checkReplies(tg *telegramtest.Server, sentPer []int, queuedAt map[string]time.Time, f replicaFaults) replyReport {
	sent, at := tg.Sent(), tg.SentAt()
	rep := replyReport{latency: map[string]time.Duration{}}
	chats := map[int64]int{}
	for c := range sentPer {
		chats[replicaChatID(c)] = c
	}
	var replies []replicaReply
	for i, s := range sent {
		c, ok := chats[s.ChatID]
		if !ok {
			continue
		}
		m := replicaReplyRE.FindStringSubmatch(s.Text)
		if s.Method != "sendMessage" || m == nil {
			rep.notices = append(rep.notices, fmt.Sprintf("%s to chat c%d by %s: %q", s.Method, c, s.Via, s.Text))
			continue
		}
		r := replicaReply{idx: i, chat: c, text: s.Text}
		for _, f := range strings.Fields(m[2]) {
			n, _ := strconv.Atoi(strings.TrimPrefix(f, "n"))
			r.ns = append(r.ns, n)
		}
		replies = append(replies, r)
	}

	// Copies of one chunk, and the texts that answer each input.
	copies := map[string][]int{}     // chat|text -> indices in sent
	answers := map[string][]string{} // "c3 n7" -> distinct texts
	var distinct []replicaReply
	for _, r := range replies {
		key := strconv.Itoa(r.chat) + "|" + r.text
		copies[key] = append(copies[key], r.idx)
		if len(copies[key]) > 1 {
			continue
		}
		distinct = append(distinct, r)
		for _, n := range r.ns {
			in := replicaMsg(r.chat, n)
			answers[in] = append(answers[in], r.text)
			if len(answers[in]) == 1 {
				if q, ok := queuedAt[in]; ok {
					rep.latency[in] = at[r.idx].Sub(q)
				}
			}
		}
	}
	rep.replies = len(distinct)

	edge := windowEdges(sent, at, f)
	for key, idx := range copies {
		if len(idx) < 2 {
			continue
		}
		explained := 0
		for _, i := range idx {
			if edge[i] {
				explained++
			}
		}
		if explained >= len(idx)-1 {
			rep.inWindow += len(idx) - 1
			continue
		}
		var by []string
		for _, i := range idx {
			by = append(by, fmt.Sprintf("#%d by %s at %s", i, sent[i].Via, at[i].Format("15:04:05.000")))
		}
		rep.outside = append(rep.outside, fmt.Sprintf("%s delivered %d times (%s)", strings.SplitN(key, "|", 2)[1], len(idx), strings.Join(by, ", ")))
	}

	for c, total := range sentPer {
		for n := 1; n <= total; n++ {
			in := replicaMsg(c, n)
			switch texts := answers[in]; {
			case len(texts) == 0:
				rep.lost = append(rep.lost, in)
			case len(texts) > 1:
				rep.twice = append(rep.twice, fmt.Sprintf("%s answered by %q", in, texts))
			}
		}
	}

	// Per chat, each reply answers only inputs after those of the replies
	// before it.
	last := map[int]int{}
	for _, r := range distinct {
		if lo := slices.Min(r.ns); lo <= last[r.chat] {
			s := sent[r.idx]
			rep.order = append(rep.order, fmt.Sprintf("chat c%d: %q (by %s) after a reply that answered up to n%d", r.chat, s.Text, s.Via, last[r.chat]))
		}
		last[r.chat] = max(last[r.chat], slices.Max(r.ns))
	}
	slices.Sort(rep.lost)
	slices.Sort(rep.twice)
	slices.Sort(rep.outside)
	return rep
}

// windowEdges marks the messages at the edge of a signal: per chat, the
// last one each SIGKILLed run sent, and the last one the SIGSTOPped run
// sent before it was continued and the first it sent after.
func windowEdges(sent []telegramtest.Sent, at []time.Time, f replicaFaults) map[int]bool {
	edge := map[int]bool{}
	lastKilled := map[string]int{} // run|chat -> index
	lastBefore := map[int64]int{}
	firstAfter := map[int64]int{}
	for i, s := range sent {
		if s.Method != "sendMessage" {
			continue
		}
		if f.killed[s.Via] {
			lastKilled[s.Via+"|"+strconv.FormatInt(s.ChatID, 10)] = i
		}
		if s.Via == f.stopped && f.stopped != "" {
			if at[i].Before(f.contAt) {
				lastBefore[s.ChatID] = i
			} else if _, ok := firstAfter[s.ChatID]; !ok {
				firstAfter[s.ChatID] = i
			}
		}
	}
	for _, i := range lastKilled {
		edge[i] = true
	}
	for _, m := range []map[int64]int{lastBefore, firstAfter} {
		for _, i := range m {
			edge[i] = true
		}
	}
	return edge
}

// checkReplicaTranscripts reads every session's transcript through the
// storage seam (passive: every replica has stopped) and checks: each
// journal record appended once, no input with two assistant replies, the
// n's of each transcript's user messages strictly increasing, and every
// input sent present. It returns how many transcripts it read and the
// problems found.
func checkReplicaTranscripts(t *testing.T, cfgPath string, sentPer []int) (int, []string) {
	t.Helper()
	b := openPassive(t, cfgPath)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := b.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := st.List()
	if err != nil {
		t.Fatalf("list sessions: %v", err)
	}
	var problems []string
	records := map[string]int{}
	present := map[string]bool{}
	for _, e := range entries {
		tr, err := st.TranscriptOf(e)
		if err != nil {
			t.Fatalf("session %s: %v", e.SessionID, err)
		}
		h, err := tr.History(ctx)
		if err != nil {
			t.Fatalf("session %s: history: %v", e.SessionKey, err)
		}
		prev, lastN := "", 0
		for i, m := range h {
			where := fmt.Sprintf("%s message %d", e.SessionKey, i+1)
			for _, id := range m.RecordIDs {
				if records[id]++; records[id] == 2 {
					problems = append(problems, fmt.Sprintf("%s: record %s appended again", where, id))
				}
			}
			if m.Role == "assistant" && prev == "assistant" {
				problems = append(problems, where+": a second assistant reply to the same input")
			}
			prev = m.Role
			if m.Role != "user" {
				continue
			}
			for _, sm := range replicaMsgRE.FindAllStringSubmatch(m.Text(), -1) {
				c, _ := strconv.Atoi(sm[1])
				n, _ := strconv.Atoi(sm[2])
				if n <= lastN {
					problems = append(problems, fmt.Sprintf("%s: n%d after n%d (out of order or twice)", where, n, lastN))
				}
				lastN = n
				present[replicaMsg(c, n)] = true
			}
		}
	}
	var missing []string
	for c, total := range sentPer {
		for n := 1; n <= total; n++ {
			if !present[replicaMsg(c, n)] {
				missing = append(missing, replicaMsg(c, n))
			}
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("%d inputs in no transcript: %v", len(missing), firstN(missing, 20)))
	}
	return len(entries), problems
}

// pendingState describes, for diagnosis, what the database holds for
// the session of test chat c: its pending records in accept order (owner
// handle, named by owners where its logs told, consumed, answered, the
// input they carry) and its lease.
func pendingState(ctx context.Context, url string, c int, owners map[string]string) (string, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", fmt.Errorf("pending state: connect: %w", err)
	}
	defer conn.Close(ctx)
	key := fmt.Sprintf("agent:main:telegram:direct:%d", replicaChatID(c))
	rows, err := conn.Query(ctx, `SELECT seq, owner, consumed, reply IS NOT NULL, COALESCE(payload::text, ''),
			COALESCE(to_char(lease_until, 'HH24:MI:SS.MS'), '-')
		FROM delivery_records WHERE session_key = $1 AND state = 'pending' ORDER BY seq`, key)
	if err != nil {
		return "", fmt.Errorf("pending state: records: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, pending records:", key)
	for rows.Next() {
		var (
			seq                int64
			owner, payload, lu string
			consumed, answered bool
		)
		if err := rows.Scan(&seq, &owner, &consumed, &answered, &payload, &lu); err != nil {
			return "", fmt.Errorf("pending state: scan: %w", err)
		}
		if tag, ok := owners[owner]; ok {
			owner = tag
		}
		fmt.Fprintf(&b, "\n  seq %d %s owner %.8s consumed %t answered %t lease_until %s",
			seq, replicaMsgRE.FindString(payload), owner, consumed, answered, lu)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("pending state: records: %w", err)
	}
	var holder, expires string
	var token int64
	err = conn.QueryRow(ctx, `SELECT holder, token, to_char(expires_at, 'HH24:MI:SS.MS') FROM leases WHERE name = $1`,
		"session:"+key).Scan(&holder, &token, &expires)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		b.WriteString("\n  no session lease row")
	case err != nil:
		return "", fmt.Errorf("pending state: lease: %w", err)
	default:
		fmt.Fprintf(&b, "\n  session lease: holder %s token %d expires %s (now %s)", holder, token, expires,
			time.Now().UTC().Format("15:04:05.000"))
	}
	return b.String(), nil
}
