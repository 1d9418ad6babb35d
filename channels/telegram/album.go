package telegram

import (
	"sync"

	"github.com/gateway/gateway/channels"
)

// An album is one message per file, sharing a media_group_id, and clients
// put its caption (so its @mention) on the first. albumFollow lets the
// album's other files through mention gating once its first was
// addressed; the dispatcher then joins them like any quick messages of
// one sender. Telegram sends an album's messages back to back, so a
// bounded memory of recent addressed albums is enough.
const maxAlbumMarks = 1024

// albumFollow remembers the addressed albums per chat. Safe for
// concurrent use.
type albumFollow struct {
	mu    sync.Mutex
	marks map[string]struct{} // guarded by mu; key albumKey
	order []string            // guarded by mu; marks oldest first, for eviction
}

func albumKey(in channels.Inbound, group string) string { return in.ChatID + "/" + group }

// follow reports whether the group message in, of album group (its
// media_group_id, "" for none), is addressed: mentioned, or a file of an
// album whose first file was. It remembers an addressed album.
func (f *albumFollow) follow(in channels.Inbound, group string) bool {
	if group == "" {
		return in.Mentioned
	}
	k := albumKey(in, group)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.marks[k]; ok {
		return true
	}
	if !in.Mentioned {
		return false
	}
	if f.marks == nil {
		f.marks = map[string]struct{}{}
	}
	if len(f.order) >= maxAlbumMarks {
		delete(f.marks, f.order[0])
		f.order = f.order[1:]
	}
	f.marks[k] = struct{}{}
	f.order = append(f.order, k)
	return true
}
