package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/internal/mediastore"
)

// TestServeMedia: a reply's file is served by its SHA-256 with the token
// only; a picture as what it is, anything else for download and never as
// something the browser runs; a name that is not a SHA-256 is a 400, an
// absent file a 404.
func TestServeMedia(t *testing.T) {
	st := mediastore.New(t.TempDir())
	png, _, err := st.Put(strings.NewReader("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR picture"))
	if err != nil {
		t.Fatal(err)
	}
	html, _, err := st.Put(strings.NewReader("<!DOCTYPE html><script>alert(1)</script>"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Options{Token: "tok", Media: st}))
	defer srv.Close()
	get := func(path, token string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	if res, _ := get("/api/media/"+png, ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %s", res.Status)
	}
	res, body := get("/api/media/"+png, "tok")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "image/png" || !strings.HasPrefix(body, "\x89PNG") ||
		res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("picture: %s %v", res.Status, res.Header)
	}
	res, _ = get("/api/media/"+html, "tok")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/octet-stream" ||
		res.Header.Get("Content-Disposition") != "attachment" || !strings.Contains(res.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("HTML file: %s %v, want a sandboxed download", res.Status, res.Header)
	}
	for _, bad := range []string{"..%2f..%2fetc%2fpasswd", strings.ToUpper(png), png[:63]} {
		if res, body := get("/api/media/"+bad, "tok"); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "SHA-256") {
			t.Errorf("GET %s: %s %s, want 400 naming the rule", bad, res.Status, body)
		}
	}
	if res, _ := get("/api/media/"+strings.Repeat("0", 64), "tok"); res.StatusCode != http.StatusNotFound {
		t.Errorf("absent file: %s", res.Status)
	}
}
