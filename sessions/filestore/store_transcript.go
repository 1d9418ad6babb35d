package filestore

import (
	"container/list"
	"errors"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
	"io/fs"
	"sync"
)

// transcriptCacheSize bounds how many transcript.File values (each keeps its
// parsed tail in memory) a store keeps for reuse.
const transcriptCacheSize = 256

// transcriptCache is a small LRU of open transcripts by session id.
type transcriptCache struct {
	mu    sync.Mutex // guards ll, items
	ll    *list.List // front: most recently used
	items map[string]*list.Element
}

type tcItem struct {
	id string
	t  *transcript.File
}

func (c *transcriptCache) get(id string, open func() (*transcript.File, error)) (*transcript.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.ll, c.items = list.New(), map[string]*list.Element{}
	}
	if el, ok := c.items[id]; ok {
		c.ll.MoveToFront(el)
		return el.Value.(*tcItem).t, nil
	}
	t, err := open()
	if err != nil {
		return nil, err
	}
	c.items[id] = c.ll.PushFront(&tcItem{id: id, t: t})
	for c.ll.Len() > transcriptCacheSize {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.items, old.Value.(*tcItem).id)
	}
	return t, nil
}

func (c *transcriptCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		c.ll.Remove(el)
		delete(c.items, id)
	}
}

// TranscriptOf is Transcript for a session whose index entry the caller
// holds: the header's key and the compaction hint come from e, so opening
// costs nothing that grows with the index (Transcript(id) finds them by
// scanning every entry).
func (s *Store) TranscriptOf(e sessions.Entry) (*transcript.File, error) {
	path, err := transcriptPath(s.dir, e.SessionID)
	if err != nil {
		return nil, err
	}
	return s.tcache.get(e.SessionID, func() (*transcript.File, error) {
		hdr := transcript.Header{AgentID: s.agentID, Cwd: s.m.opts.StateDir, SessionKey: e.SessionKey}
		opts := []transcript.Option{s.searchHook(e.SessionID)}
		if c := s.m.committer(); c != nil {
			opts = append(opts, transcript.WithCommitter(c))
		}
		if e.CompactionOffset > 0 {
			opts = append(opts, transcript.WithCompactionHint(e.CompactionOffset))
		}
		return transcript.Open(path, e.SessionID, hdr, s.m.locks.get(path+lockExt), s.log, opts...)
	})
}

// Transcript returns the transcript of session id (of this agent): the file
// <dir>/<sessionID>.jsonl, written under the flock on <file>.lock. sessionID
// must be a canonical UUID. Values are cached and shared; an archived
// session's transcript is no longer returned once its file was renamed.
func (s *Store) Transcript(sessionID string) (*transcript.File, error) {
	path, err := transcriptPath(s.dir, sessionID)
	if err != nil {
		return nil, err
	}
	return s.tcache.get(sessionID, func() (*transcript.File, error) {
		hdr := transcript.Header{AgentID: s.agentID, Cwd: s.m.opts.StateDir}
		opts := []transcript.Option{s.searchHook(sessionID)}
		if c := s.m.committer(); c != nil {
			opts = append(opts, transcript.WithCommitter(c))
		}
		s.mu.Lock()
		if s.viewLocked() == nil {
			if sl, ok := s.slotByIDLocked(sessionID); ok {
				hdr.SessionKey = sl.c.str(fieldSessionKey)
				if off := sl.c.int(fieldCompactionOffset); off > 0 {
					opts = append(opts, transcript.WithCompactionHint(off))
				}
			}
		}
		s.mu.Unlock()
		return transcript.Open(path, sessionID, hdr, s.m.locks.get(path+lockExt), s.log, opts...)
	})
}

// committer is the journal when this process opened it (the daemon):
// durable appends of transcripts opened from now on share its fsyncs
// (journal_redo.go). nil otherwise: they fsync their file.
func (m *Manager) committer() transcript.Committer {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	if m.journal == nil || m.journal.openErr != nil || m.opts.Passive {
		return nil
	}
	return m.journal
}

// settleTranscript makes the transcript at path durable before the file is
// renamed (archived): the journal's redo lines name it by its path. A
// process without the journal (the CLI) fsyncs it: the daemon's redo lines
// for it may not be covered by an fsync yet.
func (m *Manager) settleTranscript(path string) error {
	m.jmu.Lock()
	j := m.journal
	m.jmu.Unlock()
	if j == nil || j.openErr != nil {
		if err := fsyncFile(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return j.settleTranscript(path)
}
