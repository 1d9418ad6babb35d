package telegram

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/gateway/gateway/channels"
)

// An album is one message per file, sharing a media_group_id, and clients
// put its caption (so its @mention) on one of them, mostly the first.
// albumFollow lets the album's other files through mention gating once one
// was addressed (markAlbums looks ahead in a getUpdates batch for a
// caption on a later file); the dispatcher then joins them like any quick messages of
// one sender. Telegram sends an album's messages back to back, so a
// bounded memory of recent addressed albums is enough.
const maxAlbumMarks = 1024

// An album may also come split: over two getUpdates batches (a backlog
// past the batch limit, a poll answered before its last files arrived) or
// one file a webhook request. The files before the one that addresses it
// are then seen unaddressed first: they are held (at most maxHeldAlbums
// albums of maxAlbumFiles) and handed to the Handler before the file
// that addresses the album. Held files are in memory only: a restart
// drops them, as they were dropped before.
const (
	maxHeldAlbums = 256
	maxAlbumFiles = 10
)

// albumFollow remembers the addressed albums per chat, and the files held
// of albums not addressed yet. Safe for concurrent use.
type albumFollow struct {
	mu        sync.Mutex
	marks     map[string]struct{}           // guarded by mu; key albumKey
	order     []string                      // guarded by mu; marks oldest first, for eviction
	held      map[string][]channels.Inbound // guarded by mu; key albumKey
	heldOrder []string                      // guarded by mu; held albums oldest first
}

// hold keeps in, an unaddressed group message of album group, for the
// case a later file addresses the album.
func (f *albumFollow) hold(in channels.Inbound, group string) {
	if group == "" {
		return
	}
	k := albumKey(in, group)
	f.mu.Lock()
	defer f.mu.Unlock()
	files, ok := f.held[k]
	if !ok {
		if f.held == nil {
			f.held = map[string][]channels.Inbound{}
		}
		if len(f.heldOrder) >= maxHeldAlbums {
			delete(f.held, f.heldOrder[0])
			f.heldOrder = f.heldOrder[1:]
		}
		f.heldOrder = append(f.heldOrder, k)
	}
	for _, h := range files {
		if h.MessageID == in.MessageID {
			return // a redelivery
		}
	}
	if len(files) < maxAlbumFiles {
		f.held[k] = append(files, in)
	}
}

// release returns, and forgets, the files held of album group of in's
// chat, now addressed (marked as addressed to them).
func (f *albumFollow) release(in channels.Inbound, group string) []channels.Inbound {
	if group == "" || in.Event != nil {
		return nil
	}
	k := albumKey(in, group)
	f.mu.Lock()
	defer f.mu.Unlock()
	files, ok := f.held[k]
	if !ok {
		return nil
	}
	delete(f.held, k)
	f.heldOrder = slices.DeleteFunc(f.heldOrder, func(o string) bool { return o == k })
	for i := range files {
		files[i].Mentioned = true
	}
	return files
}

// putBack returns files release gave out that the Handler did not take,
// so the update's retry hands them over again.
func (f *albumFollow) putBack(in channels.Inbound, group string, files []channels.Inbound) {
	if len(files) == 0 {
		return
	}
	k := albumKey(in, group)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = map[string][]channels.Inbound{}
	}
	if _, ok := f.held[k]; !ok {
		f.heldOrder = append(f.heldOrder, k)
	}
	f.held[k] = append(files, f.held[k]...)
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
	f.markLocked(k)
	return true
}

// mark remembers album group of chat chatID as addressed.
func (f *albumFollow) mark(chatID, group string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.markLocked(chatID + "/" + group)
}

func (f *albumFollow) markLocked(k string) {
	if _, ok := f.marks[k]; ok {
		return
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
}

// markAlbums marks as addressed every album of batch one of whose files
// is (its caption mentions or commands the bot, or it replies to the
// bot), before any of them is handled: clients may put the caption on any
// file, and the files before it would otherwise be dropped unaddressed.
// Only updates naming a media_group_id are decoded a second time.
func (a *Adapter) markAlbums(batch []json.RawMessage) {
	self := a.self.Load()
	if self == nil {
		return
	}
	for _, raw := range batch {
		if !bytes.Contains(raw, []byte(`"media_group_id"`)) {
			continue
		}
		var u update
		if json.Unmarshal(raw, &u) != nil || u.Message == nil || u.Message.Chat == nil || u.Message.MediaGroupID == "" {
			continue
		}
		m := u.Message
		if m.Chat.Type != "group" && m.Chat.Type != "supergroup" {
			continue
		}
		_, mentioned, command, other := stripAddressing(m.Caption, m.CaptionEntities, self)
		reply := m.ReplyToMessage
		if reply != nil && m.IsTopicMessage && reply.MessageID == m.MessageThreadID {
			reply = nil // a topic's root, not a reply
		}
		toBot := reply != nil && reply.From != nil && reply.From.ID == self.ID
		if other || !(mentioned || command || toBot) {
			continue
		}
		a.albums.mark(strconv.FormatInt(a.liveChatID(m.Chat.ID), 10), m.MediaGroupID)
	}
}
