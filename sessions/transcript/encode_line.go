package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gateway/gateway/internal/jsonenc"
	"github.com/gateway/gateway/sessions"
)

// Hand-written JSON for the lines written on every append (message and
// compaction entries). They produce the bytes json.Encoder with
// SetEscapeHTML(false) produces for the out* shapes of encode.go, field for
// field (encode_line_test.go checks it for every block type and for odd
// strings and numbers), without reflection and without allocating beyond
// the buffer they append to.

// appendMessageLine appends the entry line of the normalised message m and
// its '\n' to dst.
func appendMessageLine(dst []byte, id, parentID string, m *sessions.Message, now time.Time) ([]byte, error) {
	dst = append(dst, `{"type":"message","id":`...)
	dst = appendJSONString(dst, id)
	dst = append(dst, `,"parentId":`...)
	dst = appendNullable(dst, parentID)
	dst = append(dst, `,"timestamp":`...)
	dst = appendTimestamp(dst, now)
	dst = append(dst, `,"message":{"role":`...)
	dst = appendJSONString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	if m.Content == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range m.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendContent(dst, &m.Content[i]); err != nil {
				return nil, err
			}
		}
		dst = append(dst, ']')
	}
	dst = appendOptString(dst, `,"toolCallId":`, m.ToolCallID)
	dst = appendOptString(dst, `,"toolName":`, m.ToolName)
	if m.Role == sessions.RoleToolResult {
		dst = append(dst, `,"isError":`...)
		dst = strconv.AppendBool(dst, m.IsError)
	}
	dst = appendOptString(dst, `,"provider":`, m.Provider)
	dst = appendOptString(dst, `,"model":`, m.Model)
	if m.Role == sessions.RoleAssistant && m.Usage != nil {
		var err error
		if dst, err = appendUsage(dst, m.Usage); err != nil {
			return nil, err
		}
	}
	dst = appendOptString(dst, `,"stopReason":`, m.StopReason)
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, m.Timestamp, 10)
	dst = append(dst, '}')
	if len(m.RecordIDs) > 0 {
		dst = append(dst, `,"recordIds":[`...)
		for i, r := range m.RecordIDs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, r)
		}
		dst = append(dst, ']')
	}
	if m.HistorySeq != 0 {
		dst = append(dst, `,"historySeq":`...)
		dst = strconv.AppendUint(dst, m.HistorySeq, 10)
	}
	return append(dst, '}', '\n'), nil
}

// appendCompactionLine appends the compaction entry line of c and its '\n'.
func appendCompactionLine(dst []byte, id, parentID string, c *sessions.Compaction, now time.Time) []byte {
	dst = append(dst, `{"type":"compaction","id":`...)
	dst = appendJSONString(dst, id)
	dst = append(dst, `,"parentId":`...)
	dst = appendNullable(dst, parentID)
	dst = append(dst, `,"timestamp":`...)
	dst = appendTimestamp(dst, now)
	dst = append(dst, `,"summary":`...)
	dst = appendJSONString(dst, c.Summary)
	dst = append(dst, `,"firstKeptEntryId":`...)
	dst = appendJSONString(dst, c.FirstKeptEntryID)
	dst = append(dst, `,"tokensBefore":`...)
	dst = strconv.AppendInt(dst, c.TokensBefore, 10)
	if c.TokensAfter != 0 {
		dst = append(dst, `,"tokensAfter":`...)
		dst = strconv.AppendInt(dst, c.TokensAfter, 10)
	}
	return append(dst, '}', '\n')
}

// appendContent appends one block as sessions.Content's json tags say.
func appendContent(dst []byte, c *sessions.Content) ([]byte, error) {
	dst = append(dst, `{"type":`...)
	dst = appendJSONString(dst, c.Type)
	dst = appendOptString(dst, `,"text":`, c.Text)
	dst = appendOptString(dst, `,"thinking":`, c.Thinking)
	dst = appendOptString(dst, `,"thinkingSignature":`, c.Signature)
	dst = appendOptString(dst, `,"id":`, c.ID)
	dst = appendOptString(dst, `,"name":`, c.Name)
	if len(c.Arguments) > 0 {
		dst = append(dst, `,"arguments":`...)
		// As json.Marshal does with a RawMessage: validated and compacted.
		b := bytes.NewBuffer(dst)
		if err := json.Compact(b, c.Arguments); err != nil {
			return nil, fmt.Errorf("transcript: encode message: block arguments: %w", err)
		}
		dst = b.Bytes()
	}
	dst = appendOptString(dst, `,"data":`, c.Data)
	dst = appendOptString(dst, `,"mimeType":`, c.MimeType)
	return append(dst, '}'), nil
}

func appendUsage(dst []byte, u *sessions.Usage) ([]byte, error) {
	dst = append(dst, `,"usage":{"input":`...)
	dst = strconv.AppendInt(dst, u.Input, 10)
	dst = append(dst, `,"output":`...)
	dst = strconv.AppendInt(dst, u.Output, 10)
	dst = append(dst, `,"cacheRead":`...)
	dst = strconv.AppendInt(dst, u.CacheRead, 10)
	dst = append(dst, `,"cacheWrite":`...)
	dst = strconv.AppendInt(dst, u.CacheWrite, 10)
	dst = append(dst, `,"totalTokens":`...)
	dst = strconv.AppendInt(dst, u.TotalTokens, 10)
	costs := [...]struct {
		key string
		v   float64
	}{
		{`,"cost":{"input":`, u.Cost.Input}, {`,"output":`, u.Cost.Output}, {`,"cacheRead":`, u.Cost.CacheRead},
		{`,"cacheWrite":`, u.Cost.CacheWrite}, {`,"total":`, u.Cost.Total},
	}
	for _, c := range costs {
		dst = append(dst, c.key...)
		var err error
		if dst, err = appendJSONFloat(dst, c.v); err != nil {
			return nil, err
		}
	}
	return append(dst, '}', '}'), nil
}

func appendOptString(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return appendJSONString(append(dst, key...), s)
}

func appendNullable(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, s)
}

// appendTimestamp appends now as formatTimestamp does, quoted.
func appendTimestamp(dst []byte, now time.Time) []byte {
	dst = append(dst, '"')
	dst = now.UTC().AppendFormat(dst, timestampLayout)
	return append(dst, '"')
}

// appendJSONFloat appends f as encoding/json writes a float64 (ES6 number
// formatting); NaN and infinities are errors, as there.
func appendJSONFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("transcript: encode message: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json does.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// appendJSONString appends s quoted as encoding/json does without HTML
// escaping (jsonenc).
func appendJSONString(dst []byte, s string) []byte { return jsonenc.AppendString(dst, s) }
