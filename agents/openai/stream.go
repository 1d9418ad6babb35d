package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The answer is a server-sent event stream: "data: <chunk JSON>" lines
// separated by blank lines, ending with "data: [DONE]". Comments (":
// keep-alive") and blank lines are skipped. A data payload with an
// "error" object (alone, or beside choices as OpenRouter sends it) is an
// error the server hit mid-stream. Other lines are kept (bounded):
// a server that answers 200 with a plain JSON error body instead of a
// stream has that error reported at the end, as go-openai did.

// chunk is what the accumulator reads of one chat.completion.chunk.
type chunk struct {
	Model   string          `json:"model"`
	Choices []chunkChoice   `json:"choices"`
	Usage   *chunkUsage     `json:"usage"`
	Error   json.RawMessage `json:"error"` // a mid-stream failure; null or absent when none
}

// reset empties c for the next decode, keeping its choices' backing
// array: encoding/json decodes into existing elements without zeroing
// them, so they are cleared here.
func (c *chunk) reset() {
	clear(c.Choices[:cap(c.Choices)])
	*c = chunk{Choices: c.Choices[:0]}
}

type chunkChoice struct {
	Delta struct {
		Content   string          `json:"content"`
		ToolCalls []toolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

// toolCallDelta is a fragment of a streamed tool call: the first of a call
// carries its id and name, later ones pieces of its arguments.
type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chunkUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

var (
	dataPrefix  = []byte("data:")
	donePayload = []byte("[DONE]")
	errorPrefix = []byte(`{"error":`)
)

// maxOtherLines bounds the non-data lines kept for the end-of-stream
// error check.
const maxOtherLines = 64 << 10

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 8<<10) }}

// streamReader reads the chunks of one answer. It is not safe for
// concurrent use.
type streamReader struct {
	r     *bufio.Reader
	long  []byte // a line longer than r's buffer, assembled
	other []byte // non-data lines, up to maxOtherLines
	done  bool   // "[DONE]" was read
}

func newStreamReader(body io.Reader) *streamReader {
	r := readerPool.Get().(*bufio.Reader)
	r.Reset(body)
	return &streamReader{r: r}
}

// close returns the reader's buffer to the pool; s must not be used after.
func (s *streamReader) close() {
	s.r.Reset(nil)
	readerPool.Put(s.r)
	s.r = nil
}

// next decodes the next chunk into c. It returns io.EOF at "[DONE]" (done
// is then set) or at the end of the body, an *APIError for an error payload, and the read
// error when the body breaks.
func (s *streamReader) next(c *chunk) error {
	for {
		line, readErr := s.readLine()
		line = bytes.TrimSpace(line)
		switch {
		case len(line) == 0, line[0] == ':':
			// An event separator or a comment.
		case bytes.HasPrefix(line, dataPrefix):
			payload := bytes.TrimSpace(line[len(dataPrefix):])
			if bytes.Equal(payload, donePayload) {
				s.done = true
				return io.EOF
			}
			if bytes.HasPrefix(payload, errorPrefix) {
				if e := parseAPIError(payload); e != nil {
					return e
				}
				return fmt.Errorf("malformed error in stream: %.512q", payload)
			}
			if err := json.Unmarshal(payload, c); err != nil {
				return fmt.Errorf("decoding chunk: %w", err)
			}
			if len(c.Error) > 0 && !bytes.Equal(c.Error, []byte("null")) {
				if e := parseAPIError(payload); e != nil {
					return e
				}
				return fmt.Errorf("malformed error in stream: %.512q", payload)
			}
			return nil
		default:
			if len(s.other)+len(line) <= maxOtherLines {
				s.other = append(s.other, line...)
			}
		}
		if readErr != nil {
			if errors.Is(readErr, io.EOF) {
				if e := parseAPIError(s.other); e != nil {
					return e
				}
			}
			return readErr
		}
	}
}

// readLine returns the next line (valid until the next call); at the end
// of the body it returns what is left with the read error.
func (s *streamReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	s.long = append(s.long[:0], line...)
	for {
		line, err = s.r.ReadSlice('\n')
		s.long = append(s.long, line...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return s.long, err
		}
	}
}

// cutShort is the error of a stream that ended without "[DONE]" and
// without a finish_reason: the connection closed mid-answer, or the body
// was no stream at all (a proxy's page). What was read is no complete
// answer, so it is not returned as one.
func (s *streamReader) cutShort() error {
	if len(s.other) > 0 {
		return fmt.Errorf("%w; the body began: %.256q", errCutShort, s.other)
	}
	return errCutShort
}

var errCutShort = errors.New(`stream ended before the answer was complete (no finish_reason, no "[DONE]")`)
