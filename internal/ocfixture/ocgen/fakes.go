package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// Fakes are the servers OpenClaw talks to instead of Telegram and a model
// provider. Close stops them all.
type Fakes struct {
	Telegram *telegramtest.Server
	Model    *openaitest.Server
	// BotAPIRoot is the apiRoot to give OpenClaw: the fake Bot API behind
	// JSONForm.
	BotAPIRoot string

	proxy *http.Server
	ln    net.Listener
	done  chan struct{}
}

// StartFakes starts the fake Bot API, its JSON adapter and the fake model
// answering with m.
func StartFakes(m *Model) (*Fakes, error) {
	f := &Fakes{Telegram: telegramtest.NewServer(telegramtest.Options{}), Model: openaitest.New(), done: make(chan struct{})}
	f.Model.SetReply(m.Reply)
	target, err := url.Parse(f.Telegram.URL)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("start fakes: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	// A long poll OpenClaw abandons ends in "context canceled": not news.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	f.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("start fakes: listen: %w", err)
	}
	f.BotAPIRoot = "http://" + f.ln.Addr().String()
	f.proxy = &http.Server{Handler: JSONForm(rp), ReadHeaderTimeout: 10 * time.Second}
	// Owner: Close shuts the proxy server down, which ends this goroutine.
	go func() {
		defer close(f.done)
		_ = f.proxy.Serve(f.ln)
	}()
	return f, nil
}

// Close stops every fake.
func (f *Fakes) Close() {
	if f.proxy != nil {
		_ = f.proxy.Close()
		<-f.done
	}
	f.Telegram.Close()
	f.Model.Close()
}
