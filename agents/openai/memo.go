package openai

import (
	"bytes"
	"slices"
	"unsafe"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// A session's history is sent again with every model call, and encoding
// it (escaping every string) cost ~9% of the daemon's CPU once sessions
// reach 150 messages (issue 21). With the session's llm.Memo the messages
// as last encoded are kept, and the longest run of leading messages that
// did not change is written again as it was: only what follows it (the
// new messages, usually two) is encoded.
//
// A message is the same when everything its encoding reads is: its role,
// its tool call id, and its content blocks, by the identity of their
// backing array and their count. Blocks handed out in a context are never
// changed in place (transcript.File.Context), so the same array and count
// are the same blocks; a message built anew (a merge, a memory block, a
// compaction's summary, images left out) has a new array. The memo holds
// the arrays, so their addresses are not reused while it names them.

// The tools a session is offered are built anew each turn but are mostly
// the same, and compacting their JSON schemas cost more than the messages
// once those were kept (1.6% of the daemon's CPU). The memo keeps the
// tools array as last written, with a copy of the tools it was written
// from; tools equal to those, byte for byte, are written again as they
// were.

// maxEncodedMemo is the largest encoding kept (an image-laden history is
// encoded afresh rather than held).
const maxEncodedMemo = 1 << 20

// msgKey is what one message's encoding depends on.
type msgKey struct {
	blocks *sessions.Content // first content block; nil when none
	n      int               // number of content blocks
	role   string
	callID string
}

func keyOf(m *sessions.Message) msgKey {
	k := msgKey{n: len(m.Content), role: m.Role, callID: m.ToolCallID}
	if k.n > 0 {
		k.blocks = &m.Content[0]
	}
	return k
}

// encodedMessages is a session's messages as its last request encoded
// them (the value of its llm.Memo).
type encodedMessages struct {
	keys []msgKey
	ends []int        // enc.Len() after message i
	enc  bytes.Buffer // each sent message after a comma
	// tools are the tools last written (parameters copied), toolsEnc what
	// was written for them.
	tools    []llm.Tool
	toolsEnc []byte
}

// writeMessages writes msgs, the elements of the request's messages array
// after the system prompt (first: there is none, no comma before the
// first), reusing and updating the encoding memo keeps when there is one.
func writeMessages(buf *bytes.Buffer, msgs []sessions.Message, first bool, memo *llm.Memo) {
	if memo == nil {
		for i := range msgs {
			if writeSent(buf, &msgs[i], !first) {
				first = false
			}
		}
		return
	}
	e, _ := memo.Value.(*encodedMessages)
	if e == nil {
		e = &encodedMessages{}
	}
	k := 0
	for k < len(msgs) && k < len(e.keys) && e.keys[k] == keyOf(&msgs[k]) {
		k++
	}
	end := 0
	if k > 0 {
		end = e.ends[k-1]
	}
	clear(e.keys[k:]) // let go of the blocks
	e.keys, e.ends = e.keys[:k], e.ends[:k]
	e.enc.Truncate(end)
	for i := k; i < len(msgs); i++ {
		writeSent(&e.enc, &msgs[i], true)
		e.keys = append(e.keys, keyOf(&msgs[i]))
		e.ends = append(e.ends, e.enc.Len())
	}
	b := e.enc.Bytes()
	if first && len(b) > 0 {
		b = b[1:]
	}
	buf.Write(b)
	if e.enc.Len() > maxEncodedMemo {
		memo.Value, memo.Size = nil, 0
		return
	}
	memo.Value = e
	memo.Size = e.size()
}

// writeSent writes m after a comma (when comma is set) if its role is
// sent, and reports whether it did; an unsent message leaves buf as it was.
func writeSent(buf *bytes.Buffer, m *sessions.Message, comma bool) bool {
	n := buf.Len()
	if comma {
		buf.WriteByte(',')
	}
	if writeMessage(buf, m) {
		return true
	}
	buf.Truncate(n)
	return false
}

func (e *encodedMessages) size() int {
	n := e.enc.Cap() + cap(e.keys)*int(unsafe.Sizeof(msgKey{})) + cap(e.ends)*8 + cap(e.toolsEnc)
	for _, t := range e.tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

// writeToolsMemo is writeTools, writing again what the memo keeps when the
// tools are equal to those it was written from, and keeping what it
// writes otherwise. writeMessages has set the memo's value (or dropped it).
func writeToolsMemo(buf *bytes.Buffer, tools []llm.Tool, memo *llm.Memo) error {
	var e *encodedMessages
	if memo != nil {
		e, _ = memo.Value.(*encodedMessages)
	}
	if e == nil {
		return writeTools(buf, tools)
	}
	if e.tools != nil && slices.EqualFunc(tools, e.tools, sameTool) {
		buf.Write(e.toolsEnc)
		return nil
	}
	start := buf.Len()
	if err := writeTools(buf, tools); err != nil {
		e.tools, e.toolsEnc = nil, nil
		return err
	}
	e.tools = make([]llm.Tool, len(tools))
	for i, t := range tools {
		e.tools[i] = llm.Tool{Name: t.Name, Description: t.Description, Parameters: bytes.Clone(t.Parameters)}
	}
	e.toolsEnc = append(e.toolsEnc[:0], buf.Bytes()[start:]...)
	memo.Size = e.size()
	return nil
}

// sameTool reports whether a and b are written alike: equal name,
// description and parameters, byte for byte.
func sameTool(a, b llm.Tool) bool {
	return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.Parameters, b.Parameters)
}
