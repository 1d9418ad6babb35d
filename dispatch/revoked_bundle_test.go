package dispatch

import (
	"testing"

	"github.com/gateway/gateway/channels"
)

// TestRevokedPartOfABundleIsAskedForItself: a collect batch of two
// senders failed and was queued again as one bundle led by Alice's
// message; a reload then refuses Bob. Bob's message is finished without a
// turn and Alice's stays; before, only the lead was asked and Bob's rode
// along to the agent.
func TestRevokedPartOfABundleIsAskedForItself(t *testing.T) {
	h := newHarness(t, "", nil)
	old := h.d.Runtime()
	alice := &work{RecordID: "r-alice", chatMessage: chatMessage{In: remindMsg("1", "from alice"), AdmittedBy: old}}
	bob := &work{RecordID: "r-bob", chatMessage: chatMessage{In: remindMsg("2", "from bob"), AdmittedBy: old}}
	carol := &work{RecordID: "r-carol", chatMessage: chatMessage{In: remindMsg("3", "from carol"), AdmittedBy: old}}
	lead := bundle([]*work{alice, bob, carol})
	rt := *old
	rt.Admits = func(in channels.Inbound) (bool, string) { return in.SenderID != "2", "sender_not_allowed" }
	h.d.SetRuntime(&rt)
	got := h.d.admitted(lead)
	if got == nil {
		t.Fatal("the whole bundle was dropped; Alice and Carol are still admitted")
	}
	var ids []string
	for _, p := range expand(got) {
		ids = append(ids, p.RecordID)
	}
	if len(ids) != 2 || ids[0] != "r-alice" || ids[1] != "r-carol" {
		t.Fatalf("parts left %v, want [r-alice r-carol]", ids)
	}
	// A bundle led by the refused sender keeps the others.
	lead = bundle([]*work{bob, alice})
	if got := h.d.admitted(lead); got == nil || len(expand(got)) != 1 || got.RecordID != "r-alice" {
		t.Fatalf("bundle led by Bob: %+v, want Alice's message alone", got)
	}
}
