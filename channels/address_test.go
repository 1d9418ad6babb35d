package channels

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// storedInbound and storedOutbound set every field (by assignment, so the
// same code built the golden files before Address existed).
func storedInbound() Inbound {
	var in Inbound
	in.Channel, in.AccountID, in.Agent, in.MessageID, in.ChatID = "discord", "default", "main", "m1", "c1"
	in.ChatType, in.GuildID, in.ThreadID, in.IsTopic, in.ParentChatID = Channel, "g1", "t1", true, "p1"
	in.SenderID, in.SenderName, in.CaseSensitive, in.Mentioned, in.Text = "s1", "Ann", true, true, "hi <there> & \"you\""
	in.Attachments = []Attachment{{Kind: "image", MimeType: "image/png", Size: 3, FileName: "a.png", Ref: "r", Data: []byte("abc")}}
	in.ReplyToID, in.Time = "m0", time.Date(2026, 11, 28, 23, 59, 1, 5, time.UTC)
	in.Interaction = &Interaction{ID: "i1", AppID: "app", Token: "tok", Private: true, Expires: time.Date(2026, 11, 29, 0, 14, 1, 0, time.UTC)}
	return in
}

func storedOutbound() Outbound {
	var out Outbound
	out.Channel, out.AccountID, out.ChatID, out.ThreadID, out.IsTopic = "telegram", "default", "-100", "77", true
	out.ReplyToID, out.ReplyToMode, out.Answers, out.Text = "5", "all", []string{"5", "6"}, "**hi**"
	out.SessionID, out.TokenEstimate, out.Failed, out.Draft = "s", 42, true, "d1"
	out.Interaction = &Interaction{ID: "i1", AppID: "app", Token: "tok", Expires: time.Date(2026, 11, 29, 0, 14, 1, 0, time.UTC)}
	return out
}

// TestStoredJSON pins the JSON of Inbound (the ingress journal's payload)
// and Outbound (the reply outbox's target) to what was stored before they
// embedded Address: the same names at the top level, and old records
// decode to the same values. Outbound's bytes are unchanged; Inbound's keys
// are the same but Address's five come first (embedding flattens them at
// its position), which readers of JSON do not see.
func TestStoredJSON(t *testing.T) {
	for _, tc := range []struct {
		name, golden, before string
		v                    any
		decode               func([]byte) (any, error)
	}{
		{"inbound", "inbound.golden.json", "inbound.before.json", storedInbound(), func(b []byte) (any, error) {
			var in Inbound
			err := json.Unmarshal(b, &in)
			return in, err
		}},
		{"outbound", "outbound.golden.json", "outbound.golden.json", storedOutbound(), func(b []byte) (any, error) {
			var out Outbound
			err := json.Unmarshal(b, &out)
			return out, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", tc.golden))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("encoding changed:\n got %s\nwant %s", got, want)
			}
			before, err := os.ReadFile(filepath.Join("testdata", tc.before))
			if err != nil {
				t.Fatal(err)
			}
			var a, b map[string]any
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(before, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("JSON object differs from the stored one:\n got %s\nwant %s", got, before)
			}
			old, err := tc.decode(before)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(old, tc.v) {
				t.Errorf("stored record decodes to %+v, want %+v", old, tc.v)
			}
		})
	}
}

func TestAddressKeys(t *testing.T) {
	a := Address{Channel: "telegram", AccountID: "default", ChatID: "-100", ThreadID: "7", IsTopic: true}
	if got, want := a.Account(), (AccountKey{Channel: "telegram", AccountID: "default"}); got != want {
		t.Errorf("Account() = %+v, want %+v", got, want)
	}
	if got := a.Account().String(); got != "telegram/default" {
		t.Errorf("AccountKey.String() = %q", got)
	}
	// ChatKey is part of stored record ids (drafts, room messages).
	if got := a.ChatKey(); got != "telegram/default/-100" {
		t.Errorf("ChatKey() = %q", got)
	}
	in := Inbound{Address: a}
	if in.Account() != a.Account() || in.ChatKey() != a.ChatKey() {
		t.Errorf("Inbound does not promote Address's keys")
	}
}
