package pgstore

import (
	"encoding/json"
	"strings"

	"github.com/gateway/gateway/sessions/searchtext"
)

// The search column holds searchtext.Tokens' words, the files and SQLite
// backends' words, not those of PostgreSQL's text-search parser: that
// parser keeps foo@example.com, deploy.sh, /etc/passwd, v1.2.3 and a run
// of Chinese or Japanese text whole, so "example" or "会话" found nothing
// here while the other backends found them (SPEC §3.8: one conformance
// suite). The daemon computes the words and writes them as lexemes
// (array_to_tsvector: no parser, no dictionary), and a query is the same
// words as quoted lexemes, all of which must occur (searchQuery).

// searchWords is text's words joined by spaces, the form the insert
// statements take (string_to_array(..., ' ') then array_to_tsvector); a
// word never holds a space. nil for nil.
func searchWords(text *string) *string {
	if text == nil {
		return nil
	}
	s := strings.Join(searchtext.Tokens(*text), " ")
	return &s
}

// searchQuery is the tsquery of q's words: each a quoted lexeme (quotes
// and backslashes escaped, though a word has neither), joined by &, so
// nothing in the query is an operator and every word must occur.
func searchQuery(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteString(" & ")
		}
		b.WriteByte('\'')
		for _, r := range w {
			if r == '\'' || r == '\\' {
				b.WriteRune(r)
			}
			b.WriteRune(r)
		}
		b.WriteByte('\'')
	}
	return b.String()
}

// bodySearchWords is the search words of a message entry's body, read as
// gateway_search_row (migration 00009) reads it — a string content whole;
// of an array, each {"type":"text"} block's text, a text that is not a
// string as its JSON text — for the rows whose role and time are left to
// the trigger (it keeps the words given). nil for another entry type or
// a body this cannot read (the trigger then indexes its own words).
func bodySearchWords(typ string, body []byte) *string {
	if typ != TypeMessage {
		return nil
	}
	var top struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(body, &top) != nil || !isObject(top.Message) {
		return nil
	}
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(top.Message, &m) != nil {
		return nil
	}
	var txt strings.Builder
	switch {
	case isString(m.Content):
		var s string
		if json.Unmarshal(m.Content, &s) != nil {
			return nil
		}
		txt.WriteString(s)
	case len(m.Content) > 0 && m.Content[0] == '[':
		var blocks []json.RawMessage
		if json.Unmarshal(m.Content, &blocks) != nil {
			return nil
		}
		for _, raw := range blocks {
			if !isObject(raw) {
				continue
			}
			var c map[string]json.RawMessage
			if json.Unmarshal(raw, &c) != nil {
				return nil
			}
			var typ string
			if !isString(c["type"]) || json.Unmarshal(c["type"], &typ) != nil || typ != "text" {
				continue
			}
			t, ok := c["text"]
			switch {
			case !ok || string(t) == "null":
			case isString(t):
				var s string
				if json.Unmarshal(t, &s) != nil {
					return nil
				}
				txt.WriteString(s)
			default:
				txt.Write(t)
			}
			txt.WriteByte('\n')
		}
	}
	s := txt.String()
	return searchWords(&s)
}

// entriesSearchWords is bodySearchWords of each entry (types[i],
// bodies[i]), the search argument of the statements that leave role and
// time to the trigger (Append, the import).
func entriesSearchWords(types, bodies []string) []*string {
	out := make([]*string, len(types))
	for i := range types {
		out[i] = bodySearchWords(types[i], []byte(bodies[i]))
	}
	return out
}
