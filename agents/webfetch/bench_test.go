package webfetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// BenchmarkRefusal is the per-dial cost of the address guard.
func BenchmarkRefusal(b *testing.B) {
	addrs := []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("2606:4700::1111"), netip.MustParseAddr("169.254.169.254")}
	for i := 0; b.Loop(); i++ {
		_ = Refusal(addrs[i%len(addrs)])
	}
}

// bigPage is a ~200 KB article page with navigation and scripts around it.
func bigPage() []byte {
	var s strings.Builder
	s.WriteString(`<html><head><title>Big</title><script>var a=1;</script></head><body><nav>` + strings.Repeat(`<a href="/x">link</a> `, 200) + `</nav><article>`)
	for i := 0; i < 400; i++ {
		s.WriteString("<p>Paragraph of the article with enough words to count as content, about tides, keepers and lenses, number ")
		s.WriteString(strings.Repeat("word ", 60))
		s.WriteString("</p>")
	}
	s.WriteString(`</article><footer>footer</footer></body></html>`)
	return []byte(s.String())
}

// BenchmarkDescribeHTML is text extraction of a ~200 KB page.
func BenchmarkDescribeHTML(b *testing.B) {
	page := bigPage()
	u, _ := url.Parse("http://example.com/a")
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		var res Result
		res.ContentType = "text/html; charset=utf-8"
		describe(&res, page, int64(len(page)), u, MaxMaxChars)
		if res.Text == "" {
			b.Fatal("no text")
		}
	}
}

// BenchmarkFetchLocal is a whole guarded fetch of the same page from a
// local server (connection reused).
func BenchmarkFetchLocal(b *testing.B) {
	page := bigPage()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	f := testFetcher(Options{})
	for b.Loop() {
		if _, err := f.Fetch(context.Background(), srv.URL, MaxMaxChars); err != nil {
			b.Fatal(err)
		}
	}
}
