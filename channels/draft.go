package channels

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Drafter is implemented by adapters that can post a message and change or
// remove it afterwards: the status line of streaming "progress" and the
// answer-so-far of "partial". Drafts are best effort; the final answer is
// always delivered through Chunker/Send (SPEC §3.7). With Outbound.Draft
// set, chunk 0 of a reply replaces that draft in place (an edit), so a
// partial answer ends as the final one.
type Drafter interface {
	// SendDraft posts text (Markdown, cut to one message) in out's chat and
	// topic, as a reply to out.ReplyToID if set, and returns the platform's
	// message id.
	SendDraft(ctx context.Context, out Outbound, text string) (id string, err error)
	// EditDraft replaces draft id's text (cut to one message). An edit to
	// the text already shown is not an error. A rate-limit answer is
	// returned at once (see RetryAfter), never waited out: the caller skips
	// to its latest text.
	EditDraft(ctx context.Context, out Outbound, id, text string) error
	// DeleteDraft removes draft id.
	DeleteDraft(ctx context.Context, out Outbound, id string) error
}

// ToolStreamer is implemented by adapters that show the tool calls of a
// reply while it is being generated (the web channel's "tool" events).
type ToolStreamer interface {
	Tool(ctx context.Context, out Outbound, name string, args json.RawMessage)
}

// RetryAfter is how long a platform asked the caller to wait before the
// next request (Telegram 429 retry_after), found on err by a RetryDelay
// method; zero if err carries none.
func RetryAfter(err error) time.Duration {
	var ra interface{ RetryDelay() time.Duration }
	if errors.As(err, &ra) {
		return ra.RetryDelay()
	}
	return 0
}
