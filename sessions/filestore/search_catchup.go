package filestore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/searchtext"
	"github.com/gateway/gateway/sessions/transcript"
	"go.uber.org/zap"
)

// currentSessions maps the session id of every current entry to its key.
func (s *Store) currentSessions() (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.viewLocked(); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(s.slots))
	for _, sl := range s.slots {
		out[sl.id()] = sl.c.str(fieldSessionKey)
	}
	return out, nil
}

// pendingDoc is a message read or appended, tokenised outside the lock.
type pendingDoc struct {
	role  uint8
	ts    int64
	off   int64
	words searchtext.WordList
}

func pendingOf(n *transcript.Node) (pendingDoc, bool) {
	if n == nil || !n.IsMessage || n.Msg == nil {
		return pendingDoc{}, false
	}
	role := roleCode(n.Msg.Role)
	if role == 0 || n.Msg.Role == sessions.RoleToolResult {
		// What people and the model said; tool output (fetched pages,
		// JSON, earlier search results) would drown it.
		return pendingDoc{}, false
	}
	d := pendingDoc{role: role, ts: n.Msg.Timestamp, off: n.Off}
	for _, c := range n.Msg.Content {
		if c.Type == sessions.BlockText {
			d.words.Add(c.Text)
		}
	}
	return d, d.words.Len() > 0
}

// appended is the transcript append hook: it indexes the messages among
// nodes (just written, the file now ends at end).
func (x *searchIndex) appended(agent, sid string, nodes []*transcript.Node, end int64) {
	x.ensureStarted()
	var buf [2]pendingDoc // a turn's append: its input, or its answer
	docs := buf[:0]
	for _, n := range nodes {
		if d, ok := pendingOf(n); ok {
			docs = append(docs, d)
		}
	}
	k := rowKey(agent, sid)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return
	}
	row := x.tail.row(agent, sid)
	if !x.loaded {
		// The load's catch-up reads this transcript up to here.
		if _, ok := x.first[k]; !ok && len(nodes) > 0 {
			x.first[k] = nodes[0].Off
		}
	}
	for _, d := range docs {
		if d.off < x.covered[k] {
			continue // a catch-up read it first
		}
		x.tail.add(row, d.role, d.ts, d.off, &d.words)
	}
	x.tail.cover(row, end)
	if x.loaded {
		x.covered[k] = max(x.covered[k], end)
	}
}

// catchUpAll indexes what the index misses of every current session.
func (x *searchIndex) catchUpAll(ctx context.Context) error {
	agents, err := x.m.Agents()
	if err != nil {
		return fmt.Errorf("search: catch up: %w", err)
	}
	for _, a := range agents {
		st, err := x.m.Store(a)
		if err != nil {
			return fmt.Errorf("search: catch up: %w", err)
		}
		cur, err := st.currentSessions()
		if err != nil {
			return fmt.Errorf("search: catch up: %w", err)
		}
		for sid := range cur {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := x.catchUp(a, st.dir, sid); err != nil {
				x.log.Warn("search index: transcript not indexed", zap.String("agent_id", a),
					zap.String("session_id", sid), zap.Error(err))
			}
			x.mu.Lock()
			full := len(x.tail.docs) >= flushDocs
			x.mu.Unlock()
			if full && x.writer {
				if err := x.flush(); err != nil {
					return err
				}
			}
		}
	}
	// Appends made during the load count from now on.
	x.mu.Lock()
	for i, r := range x.tail.rows {
		k := rowKey(r.agent, r.sid)
		x.covered[k] = max(x.covered[k], x.tail.rows[i].covered)
	}
	x.mu.Unlock()
	return nil
}

// catchUp indexes the lines of session sid's transcript (in dir) that the
// index does not hold: from its covered offset to the end (during the load:
// to the first line this process appended).
func (x *searchIndex) catchUp(agent, dir, sid string) error {
	path, err := transcriptPath(dir, sid)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("search: catch up: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("search: catch up: %w", err)
	}
	k := rowKey(agent, sid)
	x.mu.Lock()
	from, to := x.covered[k], fi.Size()
	if first, ok := x.first[k]; ok && !x.loaded {
		to = min(to, first)
	}
	if from > fi.Size() {
		// The transcript was replaced by a shorter one: forget what the
		// segments hold of it and read it again.
		x.dropped[k] = x.nextGen - 1
		delete(x.covered, k)
		from = 0
	}
	x.mu.Unlock()
	if from >= to {
		return nil
	}
	docs, end, err := readDocs(f, from, to)
	if err != nil {
		return fmt.Errorf("search: catch up %s: %w", path, err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	row := x.tail.row(agent, sid)
	first, appendedHere := x.first[k]
	for _, d := range docs {
		if d.off < x.covered[k] || (appendedHere && d.off >= first) {
			continue // an append indexed it meanwhile
		}
		x.tail.add(row, d.role, d.ts, d.off, &d.words)
	}
	x.tail.cover(row, end)
	x.covered[k] = max(x.covered[k], end)
	return nil
}

// readDocs parses the whole lines of f in [from, to) and returns their
// messages and the offset after the last whole line. A line that does not
// parse is skipped (the loader reports it); a last line without its '\n'
// is left for later (torn, or still being written).
func readDocs(f io.ReaderAt, from, to int64) ([]pendingDoc, int64, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, from, to-from), 64<<10)
	var (
		docs []pendingDoc
		buf  []byte
		off  = from
	)
	for {
		line, err := transcript.ReadLine(r, buf[:0])
		buf = line
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if n, perr := transcript.ParseEntry(line, off); perr == nil {
				if d, ok := pendingOf(n); ok {
					docs = append(docs, d)
				}
			}
			off += int64(len(line))
		}
		if err == io.EOF {
			return docs, off, nil
		}
		if err != nil {
			return nil, 0, err
		}
	}
}

// ensureSession indexes session sid of agent if the index misses part of
// it (after Switch made an archived session current again).
func (x *searchIndex) ensureSession(agent, dir, sid string) {
	x.mu.Lock()
	if !x.loaded {
		// The load's catch-up may have passed it: read it when it ends.
		x.recheck = append(x.recheck, [2]string{agent, sid})
		x.mu.Unlock()
		return
	}
	x.mu.Unlock()
	if err := x.catchUp(agent, dir, sid); err != nil {
		x.log.Warn("search index: transcript not indexed", zap.String("agent_id", agent),
			zap.String("session_id", sid), zap.Error(err))
	}
}

// searchHook is the append hook of session sid's transcript.
func (s *Store) searchHook(sid string) transcript.Option {
	x, agent := s.m.search, s.agentID
	return transcript.WithAppendHook(func(nodes []*transcript.Node, end int64) { x.appended(agent, sid, nodes, end) })
}
