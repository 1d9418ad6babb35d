package discord

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
)

// TestReplyToMode: the parts of a long reply reference the message they
// answer in the first part only (first), in every part (all) or in none
// (off).
func TestReplyToMode(t *testing.T) {
	h := start(t, Config{}, fakeOptions())
	text := strings.Repeat("word ", 900) // three parts of at most 2000 characters
	for _, tc := range []struct {
		mode string
		want []bool
	}{
		{channels.ReplyToFirst, []bool{true, false, false}},
		{channels.ReplyToAll, []bool{true, true, true}},
		{channels.ReplyToOff, []bool{false, false, false}},
	} {
		before := len(h.fake.Sent())
		if err := h.a.Send(ctxT(t), channels.Outbound{Address: channels.Address{ChatID: channelID}, Text: text, ReplyToID: "123", ReplyToMode: tc.mode}); err != nil {
			t.Fatal(err)
		}
		sent := h.fake.Sent()[before:]
		if len(sent) != len(tc.want) {
			t.Fatalf("%s: %d parts, want %d", tc.mode, len(sent), len(tc.want))
		}
		for i, s := range sent {
			if got := s.Reference != nil && s.Reference.MessageID == "123"; got != tc.want[i] {
				t.Errorf("%s: part %d references the message: %v, want %v", tc.mode, i, got, tc.want[i])
			}
		}
	}
}
