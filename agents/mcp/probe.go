package mcp

import (
	"context"
	"fmt"
	"net/http"

	"go.uber.org/zap"
)

// ProbeResult is what one connection to a server showed.
type ProbeResult struct {
	Server       string `json:"server"`
	Transport    string `json:"transport"`
	ServerName   string `json:"serverName,omitempty"`
	Version      string `json:"serverVersion,omitempty"`
	Protocol     string `json:"protocolVersion,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	// Tools are the tools the filter admits, as offered to models;
	// Filtered counts the ones it left out.
	Tools    []Tool `json:"tools"`
	Filtered int    `json:"filtered"`
}

// ProbeOptions are Probe's settings besides the server's config.
type ProbeOptions struct {
	Logger     *zap.Logger
	HTTPClient *http.Client
	Version    string
}

// Probe connects to the server once (within its connectTimeout or ctx),
// lists its tools and disconnects (a stdio server is stopped). It is what
// `gateway mcp probe` runs; the error says what failed.
func Probe(ctx context.Context, name string, cfg ServerConfig, opts ProbeOptions) (ProbeResult, error) {
	res := ProbeResult{Server: name, Transport: cfg.Transport(), Tools: []Tool{}}
	if err := cfg.Validate(); err != nil {
		return res, fmt.Errorf("mcp: probe %s: %w", name, err)
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	d := &dialer{name: name, cfg: cfg, version: opts.Version, http: opts.HTTPClient, log: log}
	cctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout())
	defer cancel()
	cs, err := d.connect(cctx)
	if err != nil {
		return res, fmt.Errorf("mcp: probe %s: %w", name, cfg.redact(err))
	}
	defer func() { _ = cs.Close() }()
	if ir := cs.InitializeResult(); ir != nil {
		res.Protocol, res.Instructions = ir.ProtocolVersion, ir.Instructions
		if ir.ServerInfo != nil {
			res.ServerName, res.Version = ir.ServerInfo.Name, ir.ServerInfo.Version
		}
	}
	raw, err := listTools(cctx, cs, log)
	if err != nil {
		return res, fmt.Errorf("mcp: probe %s: %w%s", name, cfg.redact(err), d.stderrTail())
	}
	d.ready()
	res.Tools = offered(name, cfg, raw, log)
	res.Filtered = len(raw) - len(res.Tools)
	return res, nil
}
