package discord

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

// TestPairingOverDiscord drives the access policy with the real adapter: an
// unknown DM sender gets one pairing code and nothing reaches the agent
// until an operator approves it.
func TestPairingOverDiscord(t *testing.T) {
	fo := fakeOptions()
	fo.NoEcho = true
	fake := discordtest.New(fo)
	defer fake.Close()
	cfg := Config{Token: "tok"}
	a, err := New("default", cfg, Options{HTTPClient: fake.Client()})
	if err != nil {
		t.Fatal(err)
	}
	store, err := access.OpenPairingStore(filepath.Join(t.TempDir(), "pairing"), access.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := access.New(map[access.Account]access.Config{{Channel: Name, AccountID: "default"}: {GroupsKey: "guilds"}},
		access.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	admitted := make(chan channels.Inbound, 8)
	handled := make(chan struct{}, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(ctx context.Context, in channels.Inbound) error {
			defer func() { handled <- struct{}{} }()
			d := pol.Check(in)
			if d.Reply != "" {
				if err := a.Notify(ctx, channels.Outbound{Address: channels.Address{ChatID: in.ChatID}, Text: d.Reply}); err != nil {
					t.Error(err)
				}
			}
			if !d.Allowed() {
				return channels.ErrRejected
			}
			admitted <- in
			return nil
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}

	fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "hello?"})
	fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "anyone?"})
	for range 2 {
		<-handled
	}
	sent := fake.Sent()
	if len(sent) != 1 {
		t.Fatalf("sent %d notices, want 1", len(sent))
	}
	pending, err := store.List(Name)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending = %v, %v", pending, err)
	}
	code := pending[0].Code
	if sent[0].ChannelID != dmID || !strings.Contains(sent[0].Content, code) {
		t.Fatalf("pairing reply = %+v, want code %s", sent[0], code)
	}
	if _, err := store.Approve(Name, code); err != nil {
		t.Fatal(err)
	}
	id := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "now?"})
	select {
	case in := <-admitted:
		if in.MessageID != id {
			t.Fatalf("admitted %+v before approval", in)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("approved sender not admitted")
	}
	if n := len(fake.Sent()); n != 1 {
		t.Fatalf("%d notices sent; the code goes out once", n)
	}
}
