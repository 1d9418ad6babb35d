package web

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
)

// TestReplyMediaEvent: a reply with files logs, after its text, a media
// event naming each file's API URL (by SHA-256), kind, type, name and
// size, the group's caption on its first file; a failure notice has none.
func TestReplyMediaEvent(t *testing.T) {
	sum := "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	l := newTurnLog(turnID{}, false, time.Now())
	l.finish(channels.Outbound{Text: "Here you go.", Media: []channels.MediaGroup{{Caption: "Q3",
		Items: []channels.OutMedia{{Kind: channels.MediaImage, MimeType: "image/png", FileName: "q3.png", Size: 5, SHA256: sum},
			{Kind: channels.MediaDocument, MimeType: "application/pdf", FileName: "q3.pdf", Size: 9, SHA256: sum}}}}}, time.Now())
	evs, _, _ := l.read(0)
	if len(evs) != 2 || evs[0].name != "delta" || evs[1].name != "media" {
		t.Fatalf("events %+v, want the text then media", evs)
	}
	b, _ := json.Marshal(evs[1].data)
	want := `{"files":[{"url":"/api/media/` + sum + `","kind":"image","mimeType":"image/png","name":"q3.png","size":5,"caption":"Q3"},` +
		`{"url":"/api/media/` + sum + `","kind":"document","mimeType":"application/pdf","name":"q3.pdf","size":9}]}`
	if string(b) != want {
		t.Errorf("media event\n got %s\nwant %s", b, want)
	}
	failed := newTurnLog(turnID{}, false, time.Now())
	failed.finish(channels.Outbound{Text: "sorry", Failed: true, Media: []channels.MediaGroup{{Items: []channels.OutMedia{{SHA256: sum}}}}}, time.Now())
	if evs, _, _ := failed.read(0); len(evs) != 1 || evs[0].name != "error" {
		t.Errorf("failure events %+v, want the error only", evs)
	}
}
