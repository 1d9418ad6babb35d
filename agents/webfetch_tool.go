package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/webfetch"
)

// webFetchTool offers webfetch.Fetcher.Fetch to the model. Every fetch
// failure (refused address, timeout, bad URL, HTTP transport error) is a
// tool error result the model reads; none fails the turn.
func (r *Runner) webFetchTool() tool {
	return tool{
		def: llm.Tool{
			Name: webFetchToolName,
			Description: "Fetch a public http(s) web page and return its readable text (HTML reduced to the main article; " +
				"plain text and JSON as is; other content described by type and size). Private and local addresses are refused.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","description":"an absolute http or https URL"},` +
				`"maxChars":{"type":"integer","minimum":1,"maximum":100000,"description":"cut the text to this many characters (default 20000)"}},"required":["url"]}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			var args struct {
				URL      string `json:"url"`
				MaxChars int    `json:"maxChars"`
			}
			if err := decodeArgs(raw, &args); err != nil {
				return nil, err
			}
			if strings.TrimSpace(args.URL) == "" {
				return nil, toolErrorf("url: required")
			}
			res, err := r.fetch.Fetch(ctx, strings.TrimSpace(args.URL), args.MaxChars)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err() // the turn was stopped: not the model's business
				}
				s.log.Info("web_fetch refused or failed", zap.Error(err))
				return nil, toolErrorf("%s", err.Error())
			}
			r.noteFetchedImage(s, &res)
			return res, nil
		},
	}
}

// noteFetchedImage stores a fetched image in the media store and names it
// in res by a media id, so the model can send what it fetched (issue 23:
// web_fetch of an image is a source of media out). An image the gateway
// does not send (type, size) or a turn outside a chat is only described.
func (r *Runner) noteFetchedImage(s *session, res *webfetch.Result) {
	img := res.Image
	res.Image = nil
	if len(img) == 0 || r.opts.Media == nil || s.media == nil {
		return
	}
	name := "image"
	if u, err := url.Parse(res.URL); err == nil && path.Base(u.Path) != "/" && path.Base(u.Path) != "." {
		name = path.Base(u.Path)
	}
	f, err := r.storeMedia(bytes.NewReader(img), name)
	if err != nil {
		s.log.Info("web_fetch image not kept for sending", zap.Error(err))
		return
	}
	res.Media = s.media.note(f)
	res.Note += fmt.Sprintf("; it is %s: the message tool's send_media sends it to the chat", res.Media)
}
