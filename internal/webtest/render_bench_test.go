package webtest

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pageAssets are what each page loads from the daemon.
var pageAssets = map[string][]string{
	"/":             {"/", "/style.css", "/vendor/marked.min.js", "/vendor/purify.min.js", "/markdown.js", "/common.js", "/app.js"},
	"/console.html": {"/console.html", "/style.css", "/console.css", "/vendor/marked.min.js", "/vendor/purify.min.js", "/markdown.js", "/common.js", "/console.js", "/console_sessions.js", "/console_pairing.js"},
	"/usage.html":   {"/usage.html", "/style.css", "/usage.css", "/common.js", "/usage.js"},
}

// BenchmarkPageFirstRender loads each page in headless Chromium with a
// fresh cache and reports its weight (bytes as served, and gzip'd) and
// first contentful paint and time to ready (data-ready) in milliseconds.
func BenchmarkPageFirstRender(b *testing.B) {
	env := Start(b, Config{})
	for _, page := range []string{"/", "/console.html", "/usage.html"} {
		b.Run(page, func(b *testing.B) {
			var raw, gz int
			for _, p := range pageAssets[page] {
				res, err := http.Get(env.URL + p)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatalf("%s: %s", p, res.Status)
				}
				raw += len(body)
				cw := &countWriter{}
				zw, _ := gzip.NewWriterLevel(cw, gzip.DefaultCompression)
				_, _ = zw.Write(body)
				_ = zw.Close()
				gz += cw.n
			}
			var fcp, ready float64
			for i := 0; i < b.N; i++ {
				ctx := benchBrowser(b)
				if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+page),
					chromedp.Poll[chromedp.Void](`document.body.dataset.ready === "true"`)); err != nil {
					b.Fatal(err)
				}
				v, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[
					(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime,
					performance.now()]`))
				if err != nil {
					b.Fatal(err)
				}
				fcp += v[0]
				ready += v[1]
			}
			b.ReportMetric(float64(raw), "bytes")
			b.ReportMetric(float64(gz), "gzip-bytes")
			b.ReportMetric(fcp/float64(b.N), "fcp-ms")
			b.ReportMetric(ready/float64(b.N), "ready-ms")
		})
	}
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

// benchBrowser is browser for a benchmark: a fresh profile each time (an
// empty cache).
func benchBrowser(b *testing.B) context.Context {
	b.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(b)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.UserDataDir(b.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	b.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil { // start the browser outside the measurement
		b.Fatal(err)
	}
	return ctx
}
