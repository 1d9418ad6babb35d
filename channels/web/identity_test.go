package web

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestIdentityModes(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	if _, err := NewIdentity("session", "", key); err == nil || !strings.Contains(err.Error(), "want token, cookie or address") {
		t.Errorf("unknown mode: %v", err)
	}
	if _, err := NewIdentity(IdentityCookie, "", key[:8]); err == nil || !strings.Contains(err.Error(), "key of 8 bytes") {
		t.Errorf("short key: %v", err)
	}
	tok, _ := NewIdentity(IdentityToken, "secret", nil)
	none, _ := NewIdentity(IdentityToken, "", nil)
	r := httptest.NewRequest("POST", "/api/agents/main/chat", nil)
	if a, b := tok.Of(httptest.NewRecorder(), r), none.Of(httptest.NewRecorder(), r); !strings.HasPrefix(a, "token-") || a == b || b != "token-none" {
		t.Errorf("token senders %q and %q", a, b)
	}

	addr, _ := NewIdentity(IdentityAddress, "", nil)
	for remote, want := range map[string]string{
		"203.0.113.9:5555":                   "addr-203.0.113.9",
		"[2001:db8:1:2:aaaa::1]:443":         "addr-2001:db8:1:2::/64",
		"[2001:db8:1:2:bbbb:cccc:dddd:1]:80": "addr-2001:db8:1:2::/64",
		"[::ffff:203.0.113.9]:1":             "addr-203.0.113.9",
	} {
		r.RemoteAddr = remote
		if got := addr.Of(httptest.NewRecorder(), r); got != want {
			t.Errorf("address %s: sender %q, want %q", remote, got, want)
		}
	}

	ck, _ := NewIdentity(IdentityCookie, "", key)
	w := httptest.NewRecorder()
	first := ck.Of(w, httptest.NewRequest("POST", "/api/agents/main/chat", nil))
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != CookieName || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie set: %+v", cookies)
	}
	again := httptest.NewRequest("POST", "/api/agents/main/chat", nil)
	again.AddCookie(cookies[0])
	w = httptest.NewRecorder()
	if got := ck.Of(w, again); got != first || len(w.Result().Cookies()) != 0 {
		t.Errorf("with its cookie: %q (set %v), want %q and no new cookie", got, w.Result().Cookies(), first)
	}
	id, _, _ := strings.Cut(cookies[0].Value, ".")
	forged := httptest.NewRequest("POST", "/api/agents/main/chat", nil)
	forged.AddCookie(&http.Cookie{Name: CookieName, Value: id + ".AAAAAAAAAAAAAAAAAAAAAA"})
	if got := ck.Of(httptest.NewRecorder(), forged); got == first {
		t.Errorf("a forged signature was taken for sender %q", got)
	}
	other, _ := NewIdentity(IdentityCookie, "", bytes.Repeat([]byte{8}, 32))
	if got := other.Of(httptest.NewRecorder(), again); got == first {
		t.Errorf("a cookie signed with another key was taken")
	}
}

// A turn's stream is read only by the sender that sent it: another
// browser with the turn id gets a 404, as for an unknown turn.
func TestResumeRefusesAnotherSender(t *testing.T) {
	r := newRig(t, nil)
	ck, _ := NewIdentity(IdentityCookie, "", bytes.Repeat([]byte{7}, 32))
	r.a.opts.Identity = ck
	first := r.post(t, context.Background(), `{"message":"hi"}`)
	turn := first.res.Header.Get("X-Turn-Id")
	cookies := first.res.Cookies()
	first.next(t)
	in := r.inbound(t, 0)
	if !strings.HasPrefix(in.Principal, "browser-") {
		t.Fatalf("principal %q, want the browser's sender", in.Principal)
	}
	if err := r.a.Send(context.Background(), replyTo(in, "private")); err != nil {
		t.Fatal(err)
	}
	first.rest(t)
	for _, accept := range []string{"text/event-stream", "application/json"} {
		res, s := r.get(t, context.Background(), "main", turn, "", accept) // no cookie: another sender
		body, _ := io.ReadAll(s.br)
		if res.StatusCode != http.StatusNotFound || strings.Contains(string(body), "private") {
			t.Errorf("another sender (%s): %s %s, want 404", accept, res.Status, body)
		}
	}
	req, _ := http.NewRequest("GET", r.srv.URL+"/api/agents/main/chat/turns/"+turn, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.AddCookie(cookies[0])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if evs := (&stream{res: res, br: bufio.NewReader(res.Body)}).rest(t); texts(evs) != "private" {
		t.Errorf("its own sender: %+v", evs)
	}
}
