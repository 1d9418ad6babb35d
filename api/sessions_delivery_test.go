package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// TestSessionViewHasDeliveryContext (issue 27): the API's session JSON
// carries where the session's latest reply went, and leaves the member
// out before its first reply.
func TestSessionViewHasDeliveryContext(t *testing.T) {
	e := sessions.Entry{SessionKey: "agent:main:main", SessionID: "s1",
		DeliveryContext: sessions.DeliveryContext{Channel: "discord", AccountID: "default", To: "123", ThreadID: "456"}}
	b, err := json.Marshal(ViewOf(e))
	if err != nil {
		t.Fatal(err)
	}
	if w := `"deliveryContext":{"channel":"discord","to":"123","accountId":"default","threadId":"456"}`; !strings.Contains(string(b), w) {
		t.Errorf("view %s, want %s", b, w)
	}
	e.DeliveryContext = sessions.DeliveryContext{}
	if b, _ = json.Marshal(ViewOf(e)); strings.Contains(string(b), "deliveryContext") {
		t.Errorf("view before any reply %s, want no deliveryContext", b)
	}
}
