package pgstore

import (
	"encoding/json"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// TestDeliveryCompleteFinishesAnswered: a reply retired by Sent, or by a
// Ready already all sent, finishes every record it answers (the first
// compared as a scalar, the others through the array: finishAnswered), and
// only those: a record of its list answered meanwhile by another reply,
// and a record not in its list, stay pending. Read from the table, since
// Pending leaves answered records out and Accept's dup does not tell done
// from pending.
func TestDeliveryCompleteFinishesAnswered(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	d := newDelivery(t, db, DeliveryOptions{})
	mustAccept(t, d, "a", "b", "c", "d", "e", "f", "g", "h")
	reply := func(id string, sent int, records ...string) sessions.Reply {
		return sessions.Reply{ID: id, Records: records, AgentID: "main", SessionKey: "agent:main:telegram:group:1",
			Target: json.RawMessage(`{}`), Chunks: []string{"x", "y"}, Sent: sent}
	}
	for _, r := range []sessions.Reply{
		reply("one", 0, "a"),
		reply("three", 0, "b", "c", "d"),
		reply("sent", 2, "e", "f"), // all sent already: Ready completes it
		reply("moved", 0, "g", "h"),
		reply("taker", 0, "h"), // h is answered by taker now
	} {
		if err := d.Ready(r); err != nil {
			t.Fatalf("Ready(%s): %v", r.ID, err)
		}
	}
	for _, id := range []string{"one", "three", "moved"} {
		if err := d.Sent(id, 1); err != nil {
			t.Fatal(err)
		}
		if err := d.Sent(id, 2); err != nil {
			t.Fatal(err)
		}
	}
	db.writes.barrier() // the sent marks are committed (Sent does not wait)
	want := map[string]string{"a": "done", "b": "done", "c": "done", "d": "done", "e": "done", "f": "done",
		"g": "done", "h": "pending"}
	rows, err := db.pool.Query(ctx, `SELECT id, state, COALESCE(reply, '') FROM delivery_records`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, state, reply string
		if err := rows.Scan(&id, &state, &reply); err != nil {
			t.Fatal(err)
		}
		n++
		if state != want[id] {
			t.Errorf("record %s is %s (reply %q), want %s", id, state, reply, want[id])
		}
		if id == "h" && reply != "taker" {
			t.Errorf("record h answered by %q, want taker", reply)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Errorf("%d records, want %d", n, len(want))
	}
	if rs, err := d.Replies(); err != nil || len(rs) != 1 || rs[0].ID != "taker" {
		t.Errorf("Replies = %+v, %v; want taker only", rs, err)
	}
}
