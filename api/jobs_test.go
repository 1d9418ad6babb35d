package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestJobRoutes: POST /api/jobs schedules into a session's chat, 400
// naming what is wrong for a malformed schedule or an unknown session;
// GET lists; DELETE removes once, then 404; the token is required.
func TestJobRoutes(t *testing.T) {
	mgr, st := mainStore(t)
	k, _ := routing.PeerKey("main", "telegram", "", routing.Group, "-100")
	if _, _, err := st.Begin(context.Background(), k, sessions.Origin{Channel: "telegram", ChatType: "group", AccountID: "default",
		To: "-100", From: "7", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(api.New(api.Options{Token: "tok", Sessions: mgr.Backend(),
		Jobs: &api.JobSettings{Now: func() time.Time { return now }}}))
	defer srv.Close()
	call := func(method, path, token, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewBufferString(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		return res.StatusCode, b.String()
	}
	if code, _ := call("GET", "/api/jobs", "", ""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d", code)
	}
	if code, body := call("POST", "/api/jobs", "tok", `{"session":"`+k.String()+`","when":"cron 0 9 * x stand-up"}`); code != 400 || !strings.Contains(body, "failed to parse") {
		t.Errorf("malformed cron: %d %s", code, body)
	}
	if code, body := call("POST", "/api/jobs", "tok", `{"session":"agent:main:telegram:group:-999","when":"in 2 hours x"}`); code != 400 || !strings.Contains(body, "no session") {
		t.Errorf("unknown session: %d %s", code, body)
	}
	code, body := call("POST", "/api/jobs", "tok", `{"session":"`+k.String()+`","when":"tomorrow 09:00 stand-up"}`)
	var added struct{ Job sessions.Job }
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &added) != nil ||
		!added.Job.NextAt.Equal(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)) || added.Job.Target.ChatID != "-100" {
		t.Fatalf("add: %d %s", code, body)
	}
	if code, body := call("GET", "/api/jobs", "tok", ""); code != 200 || !strings.Contains(body, added.Job.ID) {
		t.Errorf("list: %d %s", code, body)
	}
	if code, _ := call("DELETE", "/api/jobs/"+added.Job.ID, "tok", ""); code != 200 {
		t.Errorf("remove: %d", code)
	}
	if code, _ := call("DELETE", "/api/jobs/"+added.Job.ID, "tok", ""); code != 404 {
		t.Errorf("second remove: %d", code)
	}
	// An id or a filter no job can have is the caller's mistake on every
	// backend (PostgreSQL answered 500 with its driver error).
	for _, path := range []string{"/api/jobs/a%00b", "/api/jobs/a%FFb"} {
		if code, body := call("DELETE", path, "tok", ""); code != 400 || !strings.Contains(body, "job id") {
			t.Errorf("DELETE %s: %d %s, want 400 naming the job id", path, code, body)
		}
	}
	for _, q := range []string{"session=a%00b", "agent=a%00b", "session=a%FFb"} {
		if code, body := call("GET", "/api/jobs?"+q, "tok", ""); code != 400 {
			t.Errorf("GET /api/jobs?%s: %d %s, want 400", q, code, body)
		}
	}
}

// mainStore opens a files backend in a temporary state dir (closed when t
// ends) and returns it with agent main's store.
func mainStore(t *testing.T) (*filestore.Manager, *filestore.Store) {
	t.Helper()
	mgr, err := filestore.Open(filestore.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close() })
	st, err := mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	return mgr, st
}
