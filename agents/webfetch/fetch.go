package webfetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// Defaults of Options.
const (
	DefaultMaxBytes = 2 << 20 // bytes read from a response body
	DefaultTimeout  = 20 * time.Second
	DefaultMaxChars = 20000 // text returned when the call names no maxChars
	MaxMaxChars     = 100000
	MaxRedirects    = 5
)

// Resolver looks up a host's addresses (*net.Resolver satisfies it).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configures a Fetcher; zero fields take the defaults.
type Options struct {
	MaxBytes int64
	Timeout  time.Duration
	// Resolver replaces net.DefaultResolver (tests map names to addresses).
	Resolver Resolver
	// Permit lets the dialler reach addresses Refusal would refuse. Tests
	// only set it, to reach their local httptest servers; the daemon never
	// does and no configuration key reaches it.
	Permit func(netip.Addr) bool
	Logger *zap.Logger
}

// Fetcher performs guarded GETs. It is safe for concurrent use.
type Fetcher struct {
	opts   Options
	client *http.Client
	log    *zap.Logger
}

// Result is what a fetch returns to the model.
type Result struct {
	URL         string `json:"url"` // after redirects
	Status      int    `json:"status"`
	ContentType string `json:"contentType,omitempty"`
	Title       string `json:"title,omitempty"`
	Text        string `json:"text,omitempty"`
	// Note describes content that is not shown (binary types) or how the
	// text was cut.
	Note      string `json:"note,omitempty"`
	Bytes     int64  `json:"bytes"`               // body bytes read
	Truncated bool   `json:"truncated,omitempty"` // body past MaxBytes or text past maxChars
	// Media is the media id the caller stored an image under (see
	// Image), for the model to send with the message tool.
	Media string `json:"media,omitempty"`
	// Image is the body of a whole (not truncated) image, not shown to
	// the model: the caller may keep it for sending (agents, media out).
	Image []byte `json:"-"`
}

// New returns a Fetcher.
func New(opts Options) *Fetcher {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	f := &Fetcher{opts: opts, log: opts.Logger}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the guard
		DialContext:           f.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: opts.Timeout,
	}
	f.client = &http.Client{Transport: tr, CheckRedirect: checkRedirect}
	return f
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	return checkURL(req.URL)
}

func checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("only http and https URLs can be fetched, not %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	if u.User != nil {
		return errors.New("URLs with credentials are not fetched")
	}
	return nil
}

// dial resolves the host itself and dials only addresses that pass check,
// so the address judged is the address connected to.
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("webfetch: dial: %w", err)
	}
	var ips []netip.Addr
	if ip, perr := netip.ParseAddr(host); perr == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = f.opts.Resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("webfetch: resolve %s: %w", host, err)
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("webfetch: dial: port %q: %w", port, err)
	}
	var d net.Dialer
	var errs []error
	for _, ip := range ips {
		if err := check(ip, f.opts.Permit); err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := d.DialContext(ctx, network, netip.AddrPortFrom(ip.Unmap(), uint16(p)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("webfetch: resolve %s: no addresses", host)
	}
	return nil, errors.Join(errs...)
}

// Fetch GETs rawURL and returns its readable text, cut to maxChars runes
// (0: DefaultMaxChars). Its errors are safe to show to the model.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, maxChars int) (Result, error) {
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	maxChars = min(maxChars, MaxMaxChars)
	u, err := url.Parse(rawURL)
	if err != nil {
		return Result{}, errors.New("not a valid URL")
	}
	if err := checkURL(u); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Result{}, errors.New("not a valid URL")
	}
	req.Header.Set("User-Agent", "gateway-web-fetch/1 (+https://github.com/gateway/gateway)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		return Result{}, f.explain(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return Result{}, f.explain(ctx, err)
	}
	res := Result{URL: resp.Request.URL.String(), Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type")}
	if int64(len(body)) > f.opts.MaxBytes {
		body = body[:f.opts.MaxBytes]
		res.Truncated = true
	}
	res.Bytes = int64(len(body))
	describe(&res, body, resp.ContentLength, resp.Request.URL, maxChars)
	return res, nil
}

// explain turns a transport error into a message for the model.
func (f *Fetcher) explain(ctx context.Context, err error) error {
	var re *RefusedError
	if errors.As(err, &re) {
		return re
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s", f.opts.Timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("fetch failed: %w", ue.Err)
	}
	return fmt.Errorf("fetch failed: %w", err)
}
