package pgstore

import (
	"bytes"
	"encoding/json"
	"math/big"
)

// The search columns of a message entry (search, search_role, search_at:
// migration 00009), computed in Go when the entry is appended instead of
// by the insert trigger (issue 21). The trigger's PL/pgSQL re-initialises
// each of its expressions once per transaction and parses the json body at
// each operator: about 0.3 ms of server CPU per appended row when a
// transaction carries one append, the largest single cost of a turn on the
// server. The append now passes what the trigger would have computed;
// the trigger runs only for rows whose search_role is NULL (migration
// 00018): rows of other writers and the bodies searchFieldsOf leaves to it.

// searchFields is what the append passes for one entry.
type searchFields struct {
	// role is search_role: nil leaves the row to the trigger, "" marks a
	// message that is not searchable, else "user" or "assistant".
	role *string
	// text is the searchable text (its searchtext words become the search
	// column: search_tokens.go); nil when the row is not searchable.
	text *string
	// atMs is the message's own timestamp (ms); nil for the row's time.
	atMs *int64
}

// notSearchable marks a message entry the search ignores.
var notSearchable = ""

// searchFieldsOf computes an entry's search columns from its body as
// gateway_search_row and gateway_search_fill (migration 00009) do, or
// leaves the row to them (role nil) for anything unusual: a body holding a
// \u0000 or surrogate escape (which the SQL functions treat apart), a body
// or message that is not an object, a text block's text that is neither a
// string nor null, a timestamp that is not an integer of milliseconds in
// a sane range after rounding.
func searchFieldsOf(typ string, body []byte) searchFields {
	if typ != TypeMessage || triggerEscapes(body) {
		return searchFields{}
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return searchFields{}
	}
	var m map[string]json.RawMessage
	if raw, ok := top["message"]; !ok || !isObject(raw) || json.Unmarshal(raw, &m) != nil {
		return searchFields{}
	}
	var out searchFields
	// m->'timestamp', a number, rounded half away from zero as
	// numeric::bigint does.
	if raw, ok := m["timestamp"]; ok && isNumber(raw) {
		at, ok := roundMillis(raw)
		if !ok {
			return searchFields{}
		}
		out.atMs = &at
	}
	// m->>'role': only the strings "user" and "assistant" count.
	var role string
	if raw, ok := m["role"]; ok && isString(raw) {
		if json.Unmarshal(raw, &role) != nil {
			return searchFields{}
		}
	}
	text, ok := contentText(m["content"])
	if !ok {
		return searchFields{}
	}
	if (role != "user" && role != "assistant") || text == nil || *text == "" {
		out.role, out.atMs = &notSearchable, nil
		return out
	}
	out.role, out.text = &role, text
	return out
}

// triggerEscapes reports whether body holds an escape the SQL functions
// treat apart (\u0000, a surrogate): such a row is left to the trigger.
func triggerEscapes(body []byte) bool {
	return bytes.Contains(body, []byte(`\u0000`)) || bytes.Contains(body, []byte(`\ud`)) || bytes.Contains(body, []byte(`\uD`))
}

// contentText is the message's text as gateway_search_row reads it: a
// string content whole; of an array, the text of each {"type":"text"}
// block joined by newlines (concat_ws: a block whose text is null or
// missing adds nothing but makes the text at least ""); nil otherwise. It
// reports false for a block's text that is neither a string nor null
// (the SQL would take its JSON text), left to the trigger.
func contentText(raw json.RawMessage) (*string, bool) {
	switch {
	case isString(raw):
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		return &s, true
	case len(raw) > 0 && raw[0] == '[':
		var blocks []json.RawMessage
		if json.Unmarshal(raw, &blocks) != nil {
			return nil, false
		}
		var txt *string
		for _, b := range blocks {
			if !isObject(b) {
				continue
			}
			var c map[string]json.RawMessage
			if json.Unmarshal(b, &c) != nil {
				return nil, false
			}
			var typ string
			if !isString(c["type"]) || json.Unmarshal(c["type"], &typ) != nil || typ != "text" {
				continue
			}
			t, ok := c["text"]
			switch {
			case !ok || string(t) == "null":
				if txt == nil {
					txt = new(string)
				}
			case isString(t):
				var s string
				if json.Unmarshal(t, &s) != nil {
					return nil, false
				}
				if txt == nil {
					txt = &s
				} else {
					joined := *txt + "\n" + s
					txt = &joined
				}
			default:
				return nil, false
			}
		}
		return txt, true
	}
	return nil, true
}

// maxSearchMillis bounds the timestamps computed here (year 5138); others
// are left to the trigger, which refuses what to_timestamp cannot take.
const maxSearchMillis = 100_000_000_000_000

// roundMillis is a JSON number as numeric::bigint casts it: rounded to
// the nearest integer, halves away from zero.
func roundMillis(raw json.RawMessage) (int64, bool) {
	r, ok := new(big.Rat).SetString(string(raw))
	if !ok {
		return 0, false
	}
	neg := r.Sign() < 0
	r.Abs(r)
	// floor(r + 1/2)
	r.Add(r, big.NewRat(1, 2))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if neg {
		q.Neg(q)
	}
	if !q.IsInt64() || q.Int64() >= maxSearchMillis || q.Int64() <= -maxSearchMillis {
		return 0, false
	}
	return q.Int64(), true
}

func isObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }
func isString(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '"' }
func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}
