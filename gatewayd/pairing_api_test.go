package gatewayd

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/api"
)

// TestConsolePairingChannelSpeltAsTheCLIDoes: the console's pairing routes
// take a channel in any case, as `gateway pairing approve` does (Telegram
// answered 400 "not a channel name" for a code pending on telegram); a
// channel that pairs nothing is a 400 naming those that do, and leaves no
// pairing state behind.
func TestConsolePairingChannelSpeltAsTheCLIDoes(t *testing.T) {
	dir := t.TempDir()
	ps, err := access.OpenPairingStore(dir, access.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req, _, err := ps.Request("telegram", "default", "7", "Ann", "7", false)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Options{Pairing: pairingAPI{&Daemon{pairing: ps}}}))
	defer srv.Close()
	post := func(path, body string) (int, string) {
		t.Helper()
		r, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		r.Host = "127.0.0.1"
		r.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		return res.StatusCode, b.String()
	}
	if code, body := post("/api/pairing/Telegram/approve", `{"code":"`+req.Code+`"}`); code != http.StatusOK {
		t.Fatalf("approve on Telegram: %d %s, want 200", code, body)
	}
	if ok, err := ps.IsApproved("telegram", "default", "7", false); err != nil || !ok {
		t.Fatalf("approved on telegram: %v %v", ok, err)
	}
	for _, c := range []struct{ path, body string }{
		{"/api/pairing/telegramm/approve", `{"code":"ABCD"}`},
		{"/api/pairing/telegramm/revoke", `{"accountId":"default","senderId":"7"}`},
	} {
		if code, body := post(c.path, c.body); code != http.StatusBadRequest || !strings.Contains(body, "want one of") {
			t.Errorf("POST %s: %d %s, want 400 naming the channels", c.path, code, body)
		}
	}
	if chans, err := ps.Approved(""); err != nil || len(chans) != 1 {
		t.Errorf("approvals after the typos: %+v %v", chans, err)
	}
	if pending, err := ps.List(""); err != nil || len(pending) != 0 {
		t.Errorf("pending after the typos: %+v %v (a typo's state was left)", pending, err)
	}
}
