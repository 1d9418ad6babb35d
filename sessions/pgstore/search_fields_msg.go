package pgstore

import (
	"unicode/utf8"

	"github.com/gateway/gateway/sessions"
)

// searchFieldsOfMessage is searchFieldsOf(TypeMessage, body) for body, the
// entry transcript.EncodeMessage wrote for m (m as it returned it,
// normalised), computed from m's fields instead of decoding body again:
// the decoding was 6% of the daemon's CPU on this backend (issue 21).
// body is still read for the escapes that leave a row to the trigger
// (\u0000 and surrogates, anywhere in the entry). Where a string the
// search reads is not valid UTF-8 (encoded as U+FFFD, which the decoding
// would return) or m is otherwise unusual it falls back to searchFieldsOf.
func searchFieldsOfMessage(m *sessions.Message, body []byte) searchFields {
	if triggerEscapes(body) {
		return searchFields{}
	}
	if !utf8.ValidString(m.Role) {
		return searchFieldsOf(TypeMessage, body)
	}
	// The entry always has the message's integer timestamp (no rounding).
	if m.Timestamp >= maxSearchMillis || m.Timestamp <= -maxSearchMillis {
		return searchFields{}
	}
	at := m.Timestamp
	out := searchFields{atMs: &at}
	// contentText of the blocks appendContent writes: a nil Content is
	// JSON null (no text); a text block's empty text is left out of the
	// entry (a missing text: "" when it is the first, else nothing).
	var text *string
	var joined []byte // from the second text on
	for i := range m.Content {
		c := &m.Content[i]
		if c.Type != sessions.BlockText {
			continue
		}
		switch {
		case c.Text == "":
			if text == nil {
				text = new(string)
			}
			continue
		case !utf8.ValidString(c.Text):
			return searchFieldsOf(TypeMessage, body)
		case text == nil:
			s := c.Text
			text = &s
			continue
		case joined == nil:
			joined = append(joined, *text...)
		}
		joined = append(append(joined, '\n'), c.Text...)
	}
	if joined != nil {
		s := string(joined)
		text = &s
	}
	role := m.Role
	if (role != sessions.RoleUser && role != sessions.RoleAssistant) || text == nil || *text == "" {
		out.role, out.atMs = &notSearchable, nil
		return out
	}
	out.role, out.text = &role, text
	return out
}
