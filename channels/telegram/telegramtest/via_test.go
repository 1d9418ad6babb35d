package telegramtest

import (
	"net/http"
	"net/url"
	"testing"
)

// TestViaTagsWhatAClientSent: a message sent through Via("r2") is recorded
// with Via "r2", one sent through the plain root with none.
func TestViaTagsWhatAClientSent(t *testing.T) {
	srv := Start(t, Options{})
	for _, root := range []string{srv.Via("r2"), srv.URL} {
		res, err := http.PostForm(root+"/bot"+srv.Token()+"/sendMessage", url.Values{"chat_id": {"7"}, "text": {"hi"}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("sendMessage through %s: status %d", root, res.StatusCode)
		}
	}
	sent := srv.Sent()
	if len(sent) != 2 || sent[0].Via != "r2" || sent[1].Via != "" {
		t.Errorf("sent %+v, want Via r2 then none", sent)
	}
	if at := srv.SentAt(); len(at) != 2 || at[1].Before(at[0]) {
		t.Errorf("SentAt %v", at)
	}
}
