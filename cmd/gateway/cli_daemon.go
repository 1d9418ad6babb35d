package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gateway/gateway/configs"
)

// daemonClient calls a running daemon's HTTP API (SPEC §7), so operator
// commands that change a session go through its lane instead of racing a
// turn.
type daemonClient struct {
	base  string
	token string
	http  *http.Client
}

// errNoDaemon means nothing answers on http.listen.
var errNoDaemon = errors.New("the daemon is not running (nothing answers on http.listen)")

// newDaemonClient returns a client for cfg's listener (a wildcard listen
// address is reached through loopback).
func newDaemonClient(cfg *configs.Config) *daemonClient {
	host, port, err := net.SplitHostPort(cfg.HTTP.Listen)
	if err != nil {
		return nil
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return &daemonClient{base: "http://" + net.JoinHostPort(host, port), token: cfg.HTTP.Token,
		http: &http.Client{Timeout: 10 * time.Minute}}
}

// alive reports whether the daemon answers /healthz within a second.
func (c *daemonClient) alive(ctx context.Context) bool {
	if c == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
	if err != nil {
		return false
	}
	res, err := c.http.Do(req)
	if err != nil {
		return false
	}
	_ = res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// do sends a JSON request and decodes the JSON answer into out (may be nil).
func (c *daemonClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("daemon API %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("daemon API %s %s: %w", method, path, err)
	}
	if res.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("daemon API %s %s: 401: the daemon wants http.token (set GATEWAY_HTTP_TOKEN or http.tokenFile)", method, path)
	}
	if res.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		if e.Error == "" {
			e.Error = http.StatusText(res.StatusCode)
		}
		return &apiError{Method: method, Path: path, Status: res.StatusCode, Msg: e.Error}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("daemon API %s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// apiError is a daemon's answer other than 2xx: its status and error text.
type apiError struct {
	Method, Path string
	Status       int
	Msg          string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("daemon API %s %s: %d: %s", e.Method, e.Path, e.Status, e.Msg)
}

// isAPIStatus reports whether err is the daemon's answer with status code.
func isAPIStatus(err error, code int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == code
}
