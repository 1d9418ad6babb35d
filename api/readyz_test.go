package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestReadyzFailsWhileStorageFails: /readyz answers 503 naming the storage
// failure while Health reports one, and 200 again once it clears.
func TestReadyzFailsWhileStorageFails(t *testing.T) {
	var fault atomic.Pointer[error]
	s := New(Options{Health: func() error {
		if e := fault.Load(); e != nil {
			return *e
		}
		return nil
	}})
	s.SetReady(true)
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8787/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get(); code != http.StatusOK {
		t.Fatalf("healthy: %d", code)
	}
	err := errors.New("storage unavailable: write journal.jsonl: no space left on device")
	fault.Store(&err)
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "no space left") {
		t.Fatalf("failing storage: %d %s", code, body)
	}
	fault.Store(nil)
	if code, _ := get(); code != http.StatusOK {
		t.Fatalf("recovered: %d", code)
	}
}
