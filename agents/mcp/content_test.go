package mcp

import (
	"bytes"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gateway/gateway/sessions"
)

// A result of many images each under MaxImageBytes (a browser server's
// screenshots) keeps at most MaxResultImageBytes of them in all: the rest
// are described, so one call cannot put megabytes on every later request
// of the session.
func TestConvertBoundsImagesInAll(t *testing.T) {
	img := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 1<<20)...) // 1 MiB
	r := &sdk.CallToolResult{}
	for range 5 {
		r.Content = append(r.Content, &sdk.ImageContent{Data: img, MIMEType: "image/png"})
	}
	out := convert(r)
	kept, described := 0, 0
	for _, c := range out.Content {
		switch {
		case c.Type == sessions.BlockImage:
			kept += len(img)
		case c.Type == sessions.BlockText:
			described += strings.Count(c.Text, "not shown")
		}
	}
	if kept > MaxResultImageBytes {
		t.Fatalf("images kept: %d bytes, want at most %d", kept, MaxResultImageBytes)
	}
	if kept == 0 || kept+described*len(img) != 5*len(img) {
		t.Fatalf("kept %d bytes, described %d images: want the first kept and every other described", kept, described)
	}
}
