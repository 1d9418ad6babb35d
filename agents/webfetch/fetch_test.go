package webfetch

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// loopbackV4 permits only 127.0.0.1, where httptest servers listen; every
// other refused address (::1, 10/8, 169.254/16, ...) stays refused.
func loopbackV4(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.1") }

func testFetcher(opts Options) *Fetcher {
	if opts.Permit == nil {
		opts.Permit = loopbackV4
	}
	return New(opts)
}

const article = `<!doctype html><html><head><title>Lighthouses</title><script>var x = "tracking";</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Lighthouses</h1>
<p>A lighthouse is a tower with a bright light at the top, located at an important or dangerous place regarding navigation.
Lighthouses mark dangerous coastlines, hazardous shoals, reefs and rocks, and safe entries to harbours.</p>
<p>Their numbers have declined because of the expense of maintenance and the arrival of electronic navigational systems,
yet many are still kept as aids to navigation, and some are museums that welcome visitors every summer.</p>
<p>The keeper's job was to trim the wick, replenish the fuel and wind the clockwork that turned the lens.</p>
</article><footer>Copyright nobody</footer></body></html>`

func TestFetchHTMLReadableText(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(article))
	}))
	defer srv.Close()
	res, err := testFetcher(Options{}).Fetch(context.Background(), srv.URL+"/page", 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || res.Title != "Lighthouses" {
		t.Fatalf("status %d title %q", res.Status, res.Title)
	}
	if !strings.Contains(res.Text, "bright light at the top") || !strings.Contains(res.Text, "wind the clockwork") {
		t.Fatalf("article text missing: %q", res.Text)
	}
	for _, junk := range []string{"tracking", "<p>", "var x"} {
		if strings.Contains(res.Text, junk) {
			t.Fatalf("text has %q: %q", junk, res.Text)
		}
	}
	if res.Truncated {
		t.Fatal("truncated")
	}
}

func TestFetchContentTypes(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 3000)...)
	mux := http.NewServeMux()
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("line one\n  <b>not html</b>\n"))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
		_, _ = w.Write([]byte("caf\xe9"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f := testFetcher(Options{})
	tests := []struct {
		path, text, note string
	}{
		{"/plain", "line one\n  <b>not html</b>\n", ""},
		{"/json", `{"ok":true}`, ""},
		{"/image", "", "content of type image/png, 3008 bytes, not shown"},
		{"/latin1", "café", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res, err := f.Fetch(context.Background(), srv.URL+tt.path, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.text || res.Note != tt.note {
				t.Fatalf("text %q note %q, want %q %q", res.Text, res.Note, tt.text, tt.note)
			}
		})
	}
}

func TestFetchSizeCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := []byte(strings.Repeat("x", 1024))
		for i := 0; i < 4096; i++ { // 4 MiB, far past the cap
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	f := testFetcher(Options{MaxBytes: 10000})
	res, err := f.Fetch(context.Background(), srv.URL, MaxMaxChars)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != 10000 || !res.Truncated || len(res.Text) != 10000 || res.Note != "body cut at the size limit" {
		t.Fatalf("bytes %d truncated %v text %d note %q", res.Bytes, res.Truncated, len(res.Text), res.Note)
	}
	// maxChars cuts the text further.
	res, err = f.Fetch(context.Background(), srv.URL, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Text) != 50 || res.Note != "text cut to 50 characters" {
		t.Fatalf("text %d note %q", len(res.Text), res.Note)
	}
}

func TestFetchTimeCap(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("start "))
		w.(http.Flusher).Flush() // headers out, then the body stalls
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	f := testFetcher(Options{Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := f.Fetch(context.Background(), srv.URL, 0)
	if err == nil || err.Error() != "timed out after 200ms" {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %s", d)
	}
}

func TestFetchRefusesAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-private":
			http.Redirect(w, r, "http://10.1.2.3:8080/admin", http.StatusMovedPermanently)
		case "/to-v6-loopback":
			http.Redirect(w, r, "http://[::1]/", http.StatusTemporaryRedirect)
		case "/to-internal-name":
			http.Redirect(w, r, "http://intranet.example/", http.StatusFound)
		default:
			_, _ = w.Write([]byte("secret"))
		}
	}))
	defer srv.Close()
	res := fakeResolver{"intranet.example": {"192.168.1.10"}, "both.example": {"127.0.0.1", "::1"}, "cgnat.example": {"100.64.0.7"}}
	guarded := New(Options{Resolver: res})                                     // production guard
	permitted := testFetcher(Options{Resolver: res, Timeout: 5 * time.Second}) // reaches 127.0.0.1 only
	tests := []struct {
		name string
		f    *Fetcher
		url  string
		want string
	}{
		{"loopback literal", guarded, srv.URL, "refused: 127.0.0.1 is a loopback address"},
		{"localhost name", New(Options{}), "http://localhost:" + port(srv) + "/", "is a loopback address"},
		{"name resolving to loopback", guarded, "http://both.example:" + port(srv) + "/", "is a loopback address"},
		{"cgnat name", guarded, "http://cgnat.example/", "refused: 100.64.0.7 is a carrier-grade NAT address"},
		{"metadata literal", guarded, "http://169.254.169.254/latest/meta-data/", "refused: 169.254.169.254 is a link-local address (cloud metadata lives here)"},
		{"unspecified", guarded, "http://0.0.0.0/", "refused: 0.0.0.0 is an unspecified address"},
		{"mapped v6", guarded, "http://[::ffff:10.0.0.1]/", "refused: 10.0.0.1 is a private address"},
		{"unique local v6", guarded, "http://[fd00::1]/", "refused: fd00::1 is a private address"},
		{"redirect to metadata", permitted, srv.URL + "/to-metadata", "refused: 169.254.169.254 is a link-local address (cloud metadata lives here)"},
		{"redirect to private", permitted, srv.URL + "/to-private", "refused: 10.1.2.3 is a private address"},
		{"redirect to v6 loopback", permitted, srv.URL + "/to-v6-loopback", "refused: ::1 is a loopback address"},
		{"redirect to private name", permitted, srv.URL + "/to-internal-name", "refused: 192.168.1.10 is a private address"},
		{"scheme", guarded, "file:///etc/passwd", `only http and https URLs can be fetched, not "file"`},
		{"credentials", guarded, "http://u:p@example.com/", "URLs with credentials are not fetched"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.f.Fetch(context.Background(), tt.url, 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFetchRedirectLimit(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Get("stop") == strconv.Itoa(n) {
			_, _ = w.Write([]byte("arrived"))
			return
		}
		http.Redirect(w, r, srv.URL+"/?n="+strconv.Itoa(n+1)+"&stop="+r.URL.Query().Get("stop"), http.StatusFound)
	}))
	defer srv.Close()
	f := testFetcher(Options{})
	res, err := f.Fetch(context.Background(), srv.URL+"/?n=0&stop=5", 0)
	if err != nil || res.Text != "arrived" {
		t.Fatalf("five redirects: %+v, %v", res, err)
	}
	_, err = f.Fetch(context.Background(), srv.URL+"/?n=0&stop=6", 0)
	if err == nil || !strings.Contains(err.Error(), "stopped after 5 redirects") {
		t.Fatalf("six redirects: err = %v", err)
	}
}

func TestRefusal(t *testing.T) {
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "93.184.216.34"} {
		if r := Refusal(netip.MustParseAddr(s)); r != "" {
			t.Errorf("%s refused: %s", s, r)
		}
	}
	for _, s := range []string{"127.0.0.2", "10.0.0.1", "172.16.0.1", "192.168.0.1", "169.254.169.254", "100.100.100.200",
		"0.0.0.0", "224.0.0.1", "255.255.255.255", "::", "::1", "fe80::1", "fc00::1", "ff02::1", "::ffff:127.0.0.1", "64:ff9b::a00:1", "2002:a00:1::1",
		// IPv4-compatible and IPv4-translated forms (issue 22's attack: only
		// the kernel refused them), of non-public and of public addresses.
		"::127.0.0.1", "::ffff:0:7f00:1", "::10.0.0.1", "::169.254.169.254", "::ffff:0:a9fe:a9fe", "::8.8.8.8", "::ffff:0:808:808"} {
		if Refusal(netip.MustParseAddr(s)) == "" {
			t.Errorf("%s not refused", s)
		}
	}
}

type fakeResolver map[string][]string

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ss, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

func port(s *httptest.Server) string { return s.URL[strings.LastIndex(s.URL, ":")+1:] }
