package dispatch

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
)

// TestNewCaptionKeepsTheFile (SPEC §3.6: what follows the trigger
// becomes the new session's first message): a file sent with the caption
// "/new" starts the new session with that file, as "/new look at this"
// with it does. The file was dropped without a word: the chat got
// "Started a new session." and the model never saw it.
func TestNewCaptionKeepsTheFile(t *testing.T) {
	m := &model{}
	h := newHarness(t, "", m)
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "75"}
	h.handle(in("tg", "75", "earlier"))
	h.drained()
	msg := in("tg", "75", "/new")
	msg.Attachments = []channels.Attachment{{Kind: channels.MediaDocument, FileName: "report.txt", MimeType: "text/plain", Data: []byte("quarterly figures")}}
	w := &work{chatMessage: chatMessage{In: msg}}
	w.Command, w.Args = parseCommand(msg.Text, h.reset)
	if !h.d.limitedCommand(w) {
		t.Error("/new with a file runs a turn but is not counted against the limits")
	}
	h.handle(msg)
	h.drained()
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2 (earlier; the file in the new session)", len(reqs))
	}
	var seen bool
	for _, um := range reqs[1].Messages {
		if um.Role == "user" && strings.Contains(um.Text(), "earlier") {
			t.Errorf("the file's turn saw the old session: %q", um.Text())
		}
		for _, c := range um.Content {
			if strings.Contains(c.Text, "report.txt") || strings.Contains(c.Text, "quarterly figures") {
				seen = true
			}
		}
	}
	if !seen {
		t.Errorf("the new session's first turn did not carry the file: %+v", reqs[1].Messages)
	}
	if st, err := h.mgr.Store("main"); err != nil {
		t.Fatal(err)
	} else if a, err := st.Archived(key); err != nil || len(a) != 1 {
		t.Errorf("Archived = %+v, %v; want the earlier session", a, err)
	}
}
