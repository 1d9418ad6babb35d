package filestore

import (
	"container/list"
	"sync"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// transcriptCacheSize bounds how many transcript.File values (each keeps its
// parsed tail in memory) a store keeps for reuse.
const transcriptCacheSize = 256

// transcriptCache is a small LRU of open transcripts by session id. Each
// keeps its file open (one descriptor per cached transcript); one leaving
// the cache is closed.
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
		it := old.Value.(*tcItem)
		delete(c.items, it.id)
		_ = it.t.Close() // a turn still holding it opens its file per use
	}
	return t, nil
}

// drop forgets session id's transcript (archived, moved) and closes the file
// it keeps open.
func (c *transcriptCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		c.ll.Remove(el)
		delete(c.items, id)
		_ = el.Value.(*tcItem).t.Close()
	}
}

// closeAll closes the files every cached transcript keeps open (shutdown);
// the transcripts stay cached and usable.
func (c *transcriptCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, el := range c.items {
		_ = el.Value.(*tcItem).t.Close()
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
