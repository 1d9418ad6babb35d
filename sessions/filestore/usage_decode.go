package filestore

import (
	"encoding/json"
	"errors"
	"github.com/gateway/gateway/sessions"
	"strconv"
	"time"
)

// usageDecoder reads ledger lines quickly: a line is a flat JSON object of
// strings and numbers (encodeUsageLine), so it is scanned in place and its
// repeated strings (agents, sessions, rooms, senders, models) are shared
// through a table instead of allocated per row. A line it does not
// recognise goes through encoding/json; both give the same row
// (TestUsageDecoderMatchesJSON).
type usageDecoder struct {
	strs map[string]string
	// skipEntryID leaves UsageRow.EntryID empty (queries never read it;
	// it is the one field unique to each row).
	skipEntryID bool
}

func newUsageDecoder() *usageDecoder { return &usageDecoder{strs: map[string]string{}} }

var errUsageLine = errors.New("not a flat ledger line")

// decode parses line into r.
func (d *usageDecoder) decode(line []byte, r *sessions.UsageRow) error {
	*r = sessions.UsageRow{}
	if err := d.scan(line, r); err != nil {
		*r = sessions.UsageRow{}
		return json.Unmarshal(line, r)
	}
	return nil
}

func (d *usageDecoder) intern(b []byte) string {
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	if len(d.strs) >= 1<<16 {
		return string(b) // bound the table; rows stay correct
	}
	s := string(b)
	d.strs[s] = s
	return s
}

func (d *usageDecoder) scan(line []byte, r *sessions.UsageRow) error {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return errUsageLine
	}
	i++
	for {
		i = skipSpace(line, i)
		if i < len(line) && line[i] == '}' {
			return nil
		}
		key, j, ok := plainString(line, i)
		if !ok {
			return errUsageLine
		}
		i = skipSpace(line, j)
		if i >= len(line) || line[i] != ':' {
			return errUsageLine
		}
		i = skipSpace(line, i+1)
		if i >= len(line) {
			return errUsageLine
		}
		if line[i] == '"' {
			val, j, ok := plainString(line, i)
			if !ok {
				return errUsageLine
			}
			if err := d.setString(r, key, val); err != nil {
				return err
			}
			i = j
		} else {
			j := i
			for j < len(line) && (line[j] == '-' || line[j] == '+' || line[j] == '.' || line[j] == 'e' || line[j] == 'E' || (line[j] >= '0' && line[j] <= '9')) {
				j++
			}
			if err := setNumber(r, key, line[i:j]); err != nil {
				return err
			}
			i = j
		}
		i = skipSpace(line, i)
		if i < len(line) && line[i] == ',' {
			i++
			continue
		}
		if i < len(line) && line[i] == '}' {
			return nil
		}
		return errUsageLine
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString returns the contents of the string starting at b[i] when it
// holds no escape (else ok is false: encoding/json decodes the line).
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

func (d *usageDecoder) setString(r *sessions.UsageRow, key, val []byte) error {
	switch string(key) {
	case "at":
		t, ok := parseUsageTime(val)
		if !ok {
			var err error
			if t, err = time.Parse(time.RFC3339Nano, string(val)); err != nil {
				return errUsageLine
			}
		}
		r.At = t
	case "agent":
		r.AgentID = d.intern(val)
	case "sessionKey":
		r.SessionKey = d.intern(val)
	case "sessionId":
		r.SessionID = d.intern(val)
	case "entryId":
		if !d.skipEntryID {
			r.EntryID = string(val)
		}
	case "channel":
		r.Channel = d.intern(val)
	case "room":
		r.Room = d.intern(val)
	case "senderId":
		r.SenderID = d.intern(val)
	case "senderName":
		r.SenderName = d.intern(val)
	case "provider":
		r.Provider = d.intern(val)
	case "model":
		r.Model = d.intern(val)
	default:
		return errUsageLine
	}
	return nil
}

func setNumber(r *sessions.UsageRow, key, val []byte) error {
	if string(key) == "cost" {
		f, err := strconv.ParseFloat(string(val), 64)
		if err != nil {
			return errUsageLine
		}
		r.Cost = f
		return nil
	}
	n, err := strconv.ParseInt(string(val), 10, 64)
	if err != nil {
		return errUsageLine
	}
	switch string(key) {
	case "input":
		r.Input = n
	case "output":
		r.Output = n
	case "cacheRead":
		r.CacheRead = n
	case "cacheWrite":
		r.CacheWrite = n
	default:
		return errUsageLine
	}
	return nil
}

// parseUsageTime reads the ledger's fixed-width UTC time
// ("2006-01-02T15:04:05.000Z") without time.Parse.
func parseUsageTime(b []byte) (time.Time, bool) {
	if len(b) != len(usageTime) || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != '.' || b[23] != 'Z' {
		return time.Time{}, false
	}
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	var v [7]int
	for i, f := range [7][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}, {20, 23}} {
		n, ok := num(b[f[0]:f[1]])
		if !ok {
			return time.Time{}, false
		}
		v[i] = n
	}
	if v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 59 {
		return time.Time{}, false
	}
	t := time.Date(v[0], time.Month(v[1]), v[2], v[3], v[4], v[5], v[6]*1e6, time.UTC)
	if t.Day() != v[2] { // 31 November and the like
		return time.Time{}, false
	}
	return t, true
}

// usageTime is the fixed-width UTC time at the start of every line: its
// text sorts as its time does.
const usageTime = "2006-01-02T15:04:05.000Z"
