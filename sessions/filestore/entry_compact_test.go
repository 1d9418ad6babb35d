package filestore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// sampleEntry is an entry with every kind of field set.
func sampleEntry() sessions.Entry {
	at := time.Date(2026, 3, 1, 4, 5, 6, 789000000, time.UTC)
	return sessions.Entry{
		SessionKey: "agent:main:telegram:direct:42", SessionID: "03ddb47b-e81f-42dd-a012-b5c37967bd1d",
		CreatedAt: at, SessionStartedAt: at.Add(time.Second), LastInteractionAt: at.Add(time.Minute), UpdatedAt: at.Add(time.Hour),
		Title: "Café <b>&</b> \"quotes\" \\ \u2028 \t 日本", Channel: "telegram", ChatType: "direct", LastTo: "42",
		InputTokens: 1 << 40, OutputTokens: -3, MessageCount: 7, CompactionOffset: 123456789, QueueCap: 1,
		DeliveryContext: sessions.DeliveryContext{Channel: "telegram", To: "-100<42>", ThreadID: "7"},
		SubagentCleanup: sessions.CleanupDelete, RunTimeoutSeconds: 90, RunStartedAt: 1767225600000,
	}
}

// sameEntry compares entries as decoded: times by instant and zone (two
// decodings of one fixed-offset time hold distinct *time.Location values),
// UTC ones exactly, everything else with ==.
func sameEntry(a, b sessions.Entry) bool {
	ra, rb := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for _, f := range entryFields {
		if f.kind != kindTime {
			continue
		}
		ta := ra.Field(f.index).Addr().Interface().(*time.Time)
		tb := rb.Field(f.index).Addr().Interface().(*time.Time)
		na, oa := ta.Zone()
		nb, ob := tb.Zone()
		if ta.Location() == time.UTC || tb.Location() == time.UTC {
			if *ta != *tb {
				return false
			}
		} else if !ta.Equal(*tb) || na != nb || oa != ob || ta.Location().String() != tb.Location().String() {
			return false
		}
		*ta, *tb = time.Time{}, time.Time{}
	}
	return a == b
}

// checkCompact checks the codec's contract on b: when compactOf accepts it,
// encoding/json decodes it to what entry() gives and encodes that back to
// b, and appendJSON gives b; when it refuses it, b is not what json.Marshal
// writes.
func checkCompact(t *testing.T, b []byte) (compactEntry, bool) {
	t.Helper()
	c, ok := compactOf(nil, b)
	var e sessions.Entry
	jerr := json.Unmarshal(b, &e)
	canonical := false
	if jerr == nil {
		m, err := json.Marshal(&e)
		canonical = err == nil && bytes.Equal(m, b)
	}
	if ok != canonical {
		t.Fatalf("compactOf(%s): ok %v, but json.Marshal writes it so: %v (decode error %v)", b, ok, canonical, jerr)
	}
	if !ok {
		return nil, false
	}
	if got := c.entry(); !sameEntry(got, e) {
		t.Fatalf("compactOf(%s).entry() = %+v, encoding/json decodes %+v", b, got, e)
	}
	if got := c.appendJSON(nil); !bytes.Equal(got, b) {
		t.Fatalf("compactOf(%s).appendJSON() = %s", b, got)
	}
	if c.str(fieldSessionID) != e.SessionID || c.str(fieldSessionKey) != e.SessionKey ||
		!c.time(fieldUpdatedAt).Equal(e.UpdatedAt) || !c.time(fieldLastInteractionAt).Equal(e.LastInteractionAt) ||
		c.int(fieldMessageCount) != int64(e.MessageCount) || c.int(fieldCompactionOffset) != e.CompactionOffset {
		t.Fatalf("compactOf(%s): an accessor disagrees with %+v", b, e)
	}
	return c, true
}

func TestCompactEntry(t *testing.T) {
	e := sampleEntry()
	canonical, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	berlin := time.FixedZone("", 2*3600)
	zoned := e
	zoned.CreatedAt = zoned.CreatedAt.In(berlin)
	zonedJSON, _ := json.Marshal(&zoned)
	zero, _ := json.Marshal(&sessions.Entry{})
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"canonical", string(canonical), true},
		{"zero entry", string(zero), true},
		{"fixed-offset time", string(zonedJSON), true},
		{"spaces", strings.Replace(string(canonical), `,"sessionId"`, `, "sessionId"`, 1), false},
		{"reordered", strings.Replace(string(zero), `"sessionKey":"","sessionId":""`, `"sessionId":"","sessionKey":""`, 1), false},
		{"unknown field", strings.Replace(string(zero), `"sessionId":""`, `"sessionId":"","extra":1`, 1), false},
		{"omitted zero written", strings.Replace(string(zero), `}`, `,"messageCount":0}`, 1), false},
		{"non-omitempty field missing", strings.Replace(string(zero), `"sessionKey":"",`, ``, 1), false},
		{"escaped plain char", strings.Replace(string(zero), `"sessionId":""`, `"sessionId":"\u0061"`, 1), false},
		{"html unescaped", strings.Replace(string(zero), `"sessionId":""`, `"sessionId":"<"`, 1), false},
		{"float count", strings.Replace(string(zero), `}`, `,"messageCount":1.0}`, 1), false},
		{"leading zero", strings.Replace(string(zero), `}`, `,"messageCount":01}`, 1), false},
		{"overflow", strings.Replace(string(zero), `}`, `,"messageCount":99999999999999999999}`, 1), false},
		{"trailing fraction zero", strings.Replace(string(zero), `"createdAt":"0001-01-01T00:00:00Z"`, `"createdAt":"0001-01-01T00:00:00.10Z"`, 1), false},
		{"utc as offset", strings.Replace(string(zero), `"createdAt":"0001-01-01T00:00:00Z"`, `"createdAt":"2026-01-01T00:00:00+00:00"`, 1), false},
		{"epoch milliseconds", strings.Replace(string(zero), `"createdAt":"0001-01-01T00:00:00Z"`, `"createdAt":1767225600000`, 1), false},
		{"null", strings.Replace(string(zero), `"sessionId":""`, `"sessionId":null`, 1), false},
		{"trailing bytes", string(zero) + " ", false},
		{"not an object", `[]`, false},
		{"empty", ``, false},
		{"cut", string(canonical[:len(canonical)-1]), false},
		{"invalid utf-8", strings.Replace(string(zero), `"sessionId":""`, "\"sessionId\":\"\xff\"", 1), false},
		{"object", strings.Replace(string(zero), `}`, `,"deliveryContext":{"channel":"t","threadId":"1"}}`, 1), true},
		{"object empty", strings.Replace(string(zero), `}`, `,"deliveryContext":{}}`, 1), false},
		{"object empty member", strings.Replace(string(zero), `}`, `,"deliveryContext":{"channel":""}}`, 1), false},
		{"object reordered", strings.Replace(string(zero), `}`, `,"deliveryContext":{"threadId":"1","channel":"t"}}`, 1), false},
		{"object unknown member", strings.Replace(string(zero), `}`, `,"deliveryContext":{"channel":"t","x":"1"}}`, 1), false},
		{"object numeric member", strings.Replace(string(zero), `}`, `,"deliveryContext":{"threadId":1}}`, 1), false},
		{"object spaces", strings.Replace(string(zero), `}`, `,"deliveryContext":{"channel": "t"}}`, 1), false},
		{"object cut", strings.Replace(string(zero), `}`, `,"deliveryContext":{"channel":"t"`, 1), false},
		{"object escaped", strings.Replace(string(zero), `}`, `,"deliveryContext":{"to":"a\u003cb\\"}}`, 1), true},
		{"object null", strings.Replace(string(zero), `}`, `,"deliveryContext":null}`, 1), false},
		{"feb 29 non-leap", strings.Replace(string(zero), `"createdAt":"0001-01-01T00:00:00Z"`, `"createdAt":"2025-02-29T00:00:00Z"`, 1), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := checkCompact(t, []byte(tc.in)); ok != tc.ok {
				t.Errorf("compactOf(%s): ok %v, want %v", tc.in, ok, tc.ok)
			}
		})
	}
	c, err := packEntry(&e)
	if err != nil {
		t.Fatal(err)
	}
	if !sameEntry(c.entry(), e) {
		t.Errorf("packEntry round trip: %+v, want %+v", c.entry(), e)
	}
	if len(c) > len(canonical)/2 {
		t.Errorf("compact form %d bytes, its JSON %d: want less than half", len(c), len(canonical))
	}
}

// FuzzCompactOf: whatever the bytes, compactOf accepts exactly what
// json.Marshal writes for an entry, and what it builds decodes and encodes
// as encoding/json does.
func FuzzCompactOf(f *testing.F) {
	e := sampleEntry()
	for _, x := range []sessions.Entry{e, {}} {
		b, _ := json.Marshal(&x)
		f.Add(b)
	}
	f.Add([]byte(`{"sessionKey":"a","sessionId":"b","createdAt":"2026-02-28T23:59:59.5Z","sessionStartedAt":"0000-01-01T00:00:00Z","lastInteractionAt":"9999-12-31T23:59:59.999999999Z","updatedAt":"2024-02-29T12:00:00+01:00","messageCount":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkCompact(t, b)
	})
}

// FuzzPackEntry: every entry has a compact form, and it decodes to what
// its JSON decodes to.
func FuzzPackEntry(f *testing.F) {
	f.Add("agent:main:main", "Ti<tle>\u2028\x01\xff", int64(1767225600), int64(5), 3600, int64(-7))
	f.Add("", "", int64(-62135596800), int64(0), 0, int64(0))
	f.Fuzz(func(t *testing.T, key, text string, sec, nsec int64, offset int, n int64) {
		const minSec, maxSec = -62167219200, 253402300799 // years 0000 to 9999
		sec = minSec + (sec%(maxSec-minSec)+(maxSec-minSec))%(maxSec-minSec)
		at := time.Unix(sec, nsec%1e9).In(time.FixedZone("", offset%(24*3600)))
		if at.Year() < 0 || at.Year() > 9999 {
			return
		}
		e := sessions.Entry{SessionKey: key, SessionID: text, Title: text, DisplayName: key + text,
			CreatedAt: at, SessionStartedAt: at.UTC(), LastInteractionAt: at.Local(), UpdatedAt: at.Round(time.Second),
			InputTokens: n, MessageCount: int(n), QueueCap: int(n % 1000),
			DeliveryContext: sessions.DeliveryContext{Channel: key, To: text, ThreadID: key + text}}
		b, err := json.Marshal(&e)
		if err != nil {
			return // a time json.Marshal refuses is never written
		}
		c, err := packEntry(&e)
		if err != nil {
			t.Fatalf("packEntry(%s): %v", b, err)
		}
		if d, ok := packDirect(&e); ok {
			if j, err := packJSON(&e); err != nil || !bytes.Equal(d, j) {
				t.Fatalf("packDirect(%s) = %x, through json.Marshal %x (%v)", b, d, j, err)
			}
		}
		// What a reload after writing it gives: b decoded, and where b is
		// not what json.Marshal writes for that (strings that are not
		// valid UTF-8 come back with U+FFFD, an offset of +00:00 as the
		// local zone), that written and decoded again.
		var want sessions.Entry
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(&want)
		if !bytes.Equal(wantJSON, b) {
			want = sessions.Entry{}
			if err := json.Unmarshal(wantJSON, &want); err != nil {
				t.Fatal(err)
			}
		}
		if got := c.appendJSON(nil); !bytes.Equal(got, wantJSON) {
			t.Fatalf("appendJSON = %s, want %s", got, wantJSON)
		}
		if got := c.entry(); !sameEntry(got, want) {
			t.Fatalf("entry() = %+v, encoding/json decodes %+v", got, want)
		}
	})
}

// TestUnixDays: parseUTC's day count agrees with time.Date on every day of
// the years JSON times can have.
func TestUnixDays(t *testing.T) {
	for year := 0; year <= 9999; year++ {
		for month := 1; month <= 12; month++ {
			for _, day := range []int{1, 28, daysIn(month, year)} {
				want := time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC).Unix() / 86400
				if got := unixDays(year, month, day); got != want {
					t.Fatalf("unixDays(%d, %d, %d) = %d, want %d", year, month, day, got, want)
				}
			}
		}
	}
}

// FuzzCanonicalInt: canonicalInt reads exactly the integers
// strconv.FormatInt writes, of each size, up to the first byte that is no
// digit.
func FuzzCanonicalInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "7", "-7", "01", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "2147483648", "-2147483648", "-", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		canonical := func(s string, bits int) (int64, bool) {
			v, err := strconv.ParseInt(s, 10, bits)
			return v, err == nil && strconv.FormatInt(v, 10) == s
		}
		for _, bits := range []int{8, 16, 32, 64} {
			n, end, ok := canonicalInt([]byte(s), 0, bits)
			if ok {
				if v, c := canonical(s[:end], bits); !c || v != n || (end < len(s) && s[end] >= '0' && s[end] <= '9') {
					t.Fatalf("canonicalInt(%q, %d) = %d, %d: not %q as FormatInt writes it", s, bits, n, end, s[:end])
				}
			} else if _, c := canonical(s, bits); c {
				t.Fatalf("canonicalInt(%q, %d) refused it", s, bits)
			}
		}
	})
}
