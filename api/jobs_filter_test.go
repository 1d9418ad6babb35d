package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// jobsServer serves the job routes over a files backend holding one
// telegram group session of agent main with one active job and one
// disabled job; it returns the server, the session key and the two job ids.
func jobsServer(t *testing.T) (srv *httptest.Server, key routing.Key, active, done string) {
	t.Helper()
	mgr, st := mainStore(t)
	key, _ = routing.PeerKey("main", "telegram", "", routing.Group, "-100")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if _, _, err := st.Begin(context.Background(), key, sessions.Origin{Channel: "telegram", ChatType: "group", AccountID: "default",
		To: "-100", From: "7", At: now}); err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(api.New(api.Options{Token: "tok", Sessions: mgr.Backend(),
		Jobs: &api.JobSettings{Now: func() time.Time { return now }}}))
	t.Cleanup(srv.Close)
	for _, when := range []string{"tomorrow 09:00 stand-up", "in 2 hours retro"} {
		var added struct{ Job sessions.Job }
		code, body := jobsCall(t, srv, "POST", "/api/jobs", `{"session":"`+key.String()+`","when":"`+when+`"}`)
		if code != http.StatusCreated || json.Unmarshal([]byte(body), &added) != nil {
			t.Fatalf("add %q: %d %s", when, code, body)
		}
		if active == "" {
			active = added.Job.ID
		} else {
			done = added.Job.ID
		}
	}
	if err := mgr.Backend().Jobs().DisableJob(context.Background(), done, "the room refuses the bot"); err != nil {
		t.Fatal(err)
	}
	return srv, key, active, done
}

func jobsCall(t *testing.T, srv *httptest.Server, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, bytes.NewBufferString(body))
	req.Host = "127.0.0.1"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tok")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	return res.StatusCode, b.String()
}

// listedJobs answers the ids GET /api/jobs?query lists, failing t on
// anything but 200.
func listedJobs(t *testing.T, srv *httptest.Server, query string) []string {
	t.Helper()
	code, body := jobsCall(t, srv, "GET", "/api/jobs?"+query, "")
	var got struct{ Jobs []sessions.Job }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil {
		t.Fatalf("GET /api/jobs?%s: %d %s", query, code, body)
	}
	ids := []string{}
	for _, j := range got.Jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

// TestJobListFiltersNormalised: GET /api/jobs matches an agent id or a
// session key spelt as every other route and `gateway jobs list` accept
// them (capitals, spaces around), not only byte for byte as stored.
func TestJobListFiltersNormalised(t *testing.T) {
	srv, key, active, _ := jobsServer(t)
	for _, q := range []string{
		"agent=MAIN", "agent=" + url.QueryEscape(" main "),
		"session=" + url.QueryEscape("AGENT:MAIN:TELEGRAM:GROUP:-100"),
		"session=" + url.QueryEscape(" "+key.String()+"\n"),
	} {
		if got := listedJobs(t, srv, q); len(got) != 1 || got[0] != active {
			t.Errorf("GET /api/jobs?%s lists %v, want [%s]", q, got, active)
		}
	}
	for _, q := range []string{"session=" + url.QueryEscape("not a key"), "agent=" + url.QueryEscape("%%")} {
		if code, body := jobsCall(t, srv, "GET", "/api/jobs?"+q, ""); code != http.StatusBadRequest {
			t.Errorf("GET /api/jobs?%s: %d %s, want 400", q, code, body)
		}
	}
}

// TestJobListAllParameterReadAsABoolean: ?all=0 and ?all=false list the
// active jobs only, as no all does (any value but "" listed the ended
// ones too); a value that is no boolean, or a parameter the route does
// not know (a typo that would list every job), is a 400 naming it.
func TestJobListAllParameterReadAsABoolean(t *testing.T) {
	srv, _, active, done := jobsServer(t)
	for _, q := range []string{"", "all=0", "all=false"} {
		if got := listedJobs(t, srv, q); len(got) != 1 || got[0] != active {
			t.Errorf("GET /api/jobs?%s lists %v, want the active job only [%s]", q, got, active)
		}
	}
	for _, q := range []string{"all=1", "all=true"} {
		if got := listedJobs(t, srv, q); len(got) != 2 {
			t.Errorf("GET /api/jobs?%s lists %v, want %s and %s", q, got, active, done)
		}
	}
	for q, names := range map[string]string{"all=yes please": "all", "agentId=main": "agentId"} {
		code, body := jobsCall(t, srv, "GET", "/api/jobs?"+url.PathEscape(q), "")
		if code != http.StatusBadRequest || !bytes.Contains([]byte(body), []byte(names)) {
			t.Errorf("GET /api/jobs?%s: %d %s, want 400 naming %s", q, code, body, names)
		}
	}
}

// TestJobAddTakesTheSessionKeyAsTheFiltersDo: POST /api/jobs reads its
// session key as GET /api/jobs reads its filter: spaces around it (a key
// pasted from a list) and capitals name the same session.
func TestJobAddTakesTheSessionKeyAsTheFiltersDo(t *testing.T) {
	srv, key, _, _ := jobsServer(t)
	for _, spelt := range []string{"  " + key.String() + "\n", "AGENT:MAIN:TELEGRAM:GROUP:-100"} {
		code, body := jobsCall(t, srv, "POST", "/api/jobs", `{"session":`+quoteJSON(t, spelt)+`,"when":"in 3 hours review"}`)
		if code != http.StatusCreated {
			t.Errorf("add with session %q: %d %s, want 201", spelt, code, body)
		}
	}
}

func quoteJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unreadableIndex is a backend whose agents' session entries cannot be
// read (a storage failure).
type unreadableIndex struct{ sessions.Backend }

func (b unreadableIndex) Store(agentID string) (sessions.AgentStore, error) {
	st, err := b.Backend.Store(agentID)
	return unreadableStore{st}, err
}

type unreadableStore struct{ sessions.AgentStore }

func (unreadableStore) Get(routing.Key) (sessions.Entry, bool, error) {
	return sessions.Entry{}, false, errors.New("read sessions.json: input/output error")
}

// TestJobAddStorageFailureIsNotTheRequests: POST /api/jobs answers 500
// naming the failure when the session cannot be read, not 400 (the
// request is right; retrying it later may work).
func TestJobAddStorageFailureIsNotTheRequests(t *testing.T) {
	mgr, _ := mainStore(t)
	srv := httptest.NewServer(api.New(api.Options{Token: "tok", Sessions: unreadableIndex{mgr.Backend()},
		Jobs: &api.JobSettings{}}))
	t.Cleanup(srv.Close)
	code, body := jobsCall(t, srv, "POST", "/api/jobs", `{"session":"agent:main:telegram:group:-100","when":"in 2 hours retro"}`)
	if code != http.StatusInternalServerError || !strings.Contains(body, "input/output error") {
		t.Fatalf("add with the session unreadable: %d %s, want 500 naming the failure", code, body)
	}
}
