package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fakeTelegram is a minimal, fast Bot API: getMe, getUpdates (long poll with
// offsets), sendMessage (recorded), and true-result methods.
type fakeTelegram struct {
	mu      sync.Mutex
	updates []json.RawMessage // index = update_id - 1
	avail   []time.Time       // when each update became available
	wake    chan struct{}     // closed and replaced when updates arrive
	replies map[int64][]reply // by chat id
	nextMsg int64
	onReply func(chatID int64, text string, at time.Time)
	// Streaming calls, counted apart from replies: status/draft posts
	// (sendMessage without an "ack" answer), edits and deletes.
	drafts, edits, deletes int
}

type reply struct {
	text string
	at   time.Time
}

func newFakeTelegram() *fakeTelegram {
	return &fakeTelegram{wake: make(chan struct{}), replies: map[int64][]reply{}, nextMsg: 1000}
}

// inject makes a private-chat message from user chatID available.
func (f *fakeTelegram) inject(chatID int64, text string) {
	f.mu.Lock()
	id := len(f.updates) + 1
	f.nextMsg++
	u := map[string]any{
		"update_id": id,
		"message": map[string]any{
			"message_id": f.nextMsg,
			"date":       time.Now().Unix(),
			"chat":       map[string]any{"id": chatID, "type": "private", "first_name": "u"},
			"from":       map[string]any{"id": chatID, "is_bot": false, "first_name": "u" + strconv.FormatInt(chatID, 10)},
			"text":       text,
		},
	}
	b, _ := json.Marshal(u)
	f.updates = append(f.updates, b)
	f.avail = append(f.avail, time.Now())
	close(f.wake)
	f.wake = make(chan struct{})
	f.mu.Unlock()
}

func (f *fakeTelegram) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	method := parts[len(parts)-1]
	_ = r.ParseForm()
	switch method {
	case "getMe":
		ok(w, map[string]any{"id": 999, "is_bot": true, "first_name": "Bench", "username": "bench_bot"})
	case "getUpdates":
		f.getUpdates(w, r)
	case "sendMessage":
		chat, _ := strconv.ParseInt(r.Form.Get("chat_id"), 10, 64)
		now := time.Now()
		f.mu.Lock()
		f.nextMsg++
		id := f.nextMsg
		f.replies[chat] = append(f.replies[chat], reply{text: r.Form.Get("text"), at: now})
		if !strings.Contains(r.Form.Get("text"), "ack ") {
			f.drafts++
		}
		cb := f.onReply
		f.mu.Unlock()
		if cb != nil {
			cb(chat, r.Form.Get("text"), now)
		}
		ok(w, map[string]any{"message_id": id, "date": now.Unix(), "chat": map[string]any{"id": chat, "type": "private"},
			"text": r.Form.Get("text")})
	case "editMessageText", "deleteMessage":
		f.mu.Lock()
		if method == "deleteMessage" {
			f.deletes++
		} else {
			f.edits++
		}
		f.mu.Unlock()
		ok(w, true)
	default: // sendChatAction, deleteWebhook, setMyCommands...
		ok(w, true)
	}
}

func (f *fakeTelegram) getUpdates(w http.ResponseWriter, r *http.Request) {
	offset, _ := strconv.Atoi(r.Form.Get("offset"))
	timeout, _ := strconv.Atoi(r.Form.Get("timeout"))
	limit, _ := strconv.Atoi(r.Form.Get("limit"))
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	if offset < 1 {
		offset = 1
	}
	deadline := time.After(time.Duration(timeout) * time.Second)
	for {
		f.mu.Lock()
		if n := len(f.updates); n >= offset {
			end := offset - 1 + limit
			if end > n {
				end = n
			}
			batch := append([]json.RawMessage(nil), f.updates[offset-1:end]...)
			f.mu.Unlock()
			ok(w, batch)
			return
		}
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-wake:
		case <-deadline:
			ok(w, []json.RawMessage{})
			return
		case <-r.Context().Done():
			return
		}
	}
}

func ok(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}
