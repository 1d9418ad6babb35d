package openai

import (
	"bytes"
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
}

// writeMessages writes msgs, the elements of the request's messages array
// after the system prompt (first: there is none, no comma before the
// first), reusing and updating the encoding memo keeps when there is one.
func writeMessages(buf *bytes.Buffer, msgs []sessions.Message, first bool, memo *llm.Memo) {
	if memo == nil {
		for i := range msgs {
			if !first {
				buf.WriteByte(',')
			}
			n := buf.Len()
			if writeMessage(buf, &msgs[i]) {
				first = false
			} else if !first {
				buf.Truncate(n - 1)
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
		e.enc.WriteByte(',')
		if !writeMessage(&e.enc, &msgs[i]) {
			e.enc.Truncate(e.enc.Len() - 1)
		}
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
	memo.Size = e.enc.Cap() + cap(e.keys)*int(unsafe.Sizeof(msgKey{})) + cap(e.ends)*8
}
