package filestore

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// patchStrings are strings of every kind the compact form holds: empty,
// written as is, escaped by json.Marshal, not valid UTF-8.
var patchStrings = []string{"", "", "gpt-5", "anthropic", "a", "Café 日本", "<b>&amp;", `q"uote`, `back\slash`,
	"tab\there", "line\u2028sep", "bad\xffutf8", "03ddb47b-e81f-42dd-a012-b5c37967bd1d"}

// patchTime is a time of every kind a time field holds: zero, UTC (also
// before 1678 and after 2262, outside int64 nanoseconds), a fixed offset,
// a named zone, before year 1.
func patchTime(r *rand.Rand) time.Time {
	base := time.Date(2026, 3, 1, 4, 5, 6, r.IntN(1e9), time.UTC).Add(time.Duration(r.IntN(7200)-3600) * time.Second)
	switch r.IntN(8) {
	case 0:
		return time.Time{}
	case 1:
		return base.In(time.FixedZone("", 2*3600))
	case 2:
		return base.In(time.FixedZone("X", -(5*3600 + 30*60)))
	case 3:
		return time.Date(1500+r.IntN(2), 1, 1, 0, 0, 0, 0, time.UTC)
	case 4:
		return time.Date(9999, 12, 31, 23, 59, 59, r.IntN(1e9), time.UTC)
	case 5:
		return time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC)
	case 6:
		return base.Local()
	}
	return base
}

// patchInt is an integer of the field's size: zero, small, negative,
// at the bounds.
func patchInt(r *rand.Rand, bits int) int64 {
	lim := int64(math.MaxInt64)
	if bits < 64 {
		lim = 1<<(bits-1) - 1
	}
	switch r.IntN(6) {
	case 0, 1:
		return 0
	case 2:
		return int64(r.IntN(1000))
	case 3:
		return -int64(r.IntN(1000))
	case 4:
		return lim - int64(r.IntN(3))
	}
	return -lim - 1 + int64(r.IntN(3))
}

// patchEntry is an entry with each field empty or set to a value of any
// kind, and sometimes unknown members.
func patchEntry(r *rand.Rand) sessions.Entry {
	var e sessions.Entry
	rv := reflect.ValueOf(&e).Elem()
	for _, f := range entryFields {
		fv := rv.Field(f.index)
		switch f.kind {
		case kindString:
			fv.SetString(patchStrings[r.IntN(len(patchStrings))])
		case kindInt:
			fv.SetInt(patchInt(r, f.bits))
		case kindTime:
			fv.Set(reflect.ValueOf(patchTime(r)))
		case kindObject:
			for _, m := range f.members {
				if r.IntN(2) == 0 {
					fv.Field(m.index).SetString(patchStrings[r.IntN(len(patchStrings))])
				}
			}
		}
	}
	if r.IntN(4) == 0 {
		e.Extra = `{"zeta":[1, {"b":"<x>"}],"alpha":"\u00e9"}`
	}
	return e
}

// patchDeltaOf is a delta for e: its session or another, counters that
// may bring a field to zero or wrap it, the entry's model or another, times
// before and after the entry's, sometimes an origin.
func patchDeltaOf(r *rand.Rand, e *sessions.Entry) *delta {
	d := &delta{sessionID: e.SessionID}
	if r.IntN(8) == 0 {
		d.sessionID = patchStrings[r.IntN(len(patchStrings))]
	}
	pick := func(cur int64) int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return -cur // to zero
		case 2:
			return int64(r.IntN(5000))
		}
		return patchInt(r, 64)
	}
	d.in, d.out, d.total = pick(e.InputTokens), pick(e.OutputTokens), pick(e.TotalTokens)
	d.msgs = int(pick(int64(e.MessageCount)))
	d.ctxTokens, d.compaction = pick(e.ContextTokens), pick(e.CompactionOffset)
	str := func(cur string) string {
		switch r.IntN(3) {
		case 0:
			return ""
		case 1:
			return cur
		}
		return patchStrings[r.IntN(len(patchStrings))]
	}
	d.model, d.provider = str(e.Model), str(e.Provider)
	d.lastInteraction, d.updatedAt = patchTime(r), patchTime(r)
	if r.IntN(10) == 0 {
		d.origin = &sessions.Origin{Channel: "telegram", To: "42", At: patchTime(r)}
	}
	return d
}

type patchFunc func(compactEntry, *delta) (compactEntry, bool, bool)

// checkPatch compares what patch makes of c and d with packEntry of the
// decoded entry after delta.apply, byte for byte (the compact form is
// canonical). fast says whether patch took d.
func checkPatch(c compactEntry, d *delta, patch patchFunc) (fast bool, err error) {
	dp := *d
	got, applied, ok := patch(c, &dp)
	if !reflect.DeepEqual(&dp, d) {
		return ok, fmt.Errorf("patch changed the delta: %+v", dp)
	}
	if !ok {
		return false, nil
	}
	e := c.entry()
	wantApplied := d.apply(&e)
	if applied != wantApplied {
		return true, fmt.Errorf("applied %v, delta.apply says %v", applied, wantApplied)
	}
	if !applied {
		return true, nil
	}
	want, err := packEntry(&e)
	if err != nil {
		return true, fmt.Errorf("packEntry: %v (the patch gave %x)", err, got)
	}
	if !bytes.Equal(got, want) {
		return true, fmt.Errorf("patched %s\nwant    %s", got.appendJSON(nil), want.appendJSON(nil))
	}
	return true, nil
}

// patchCases are generated entries (packed as a Store holds them) and
// deltas.
func patchCases(t *testing.T, n int) (cs []compactEntry, ds []*delta) {
	r := rand.New(rand.NewPCG(21, 1))
	for len(cs) < n {
		e := patchEntry(r)
		c, err := packEntry(&e)
		if err != nil {
			continue // a time json.Marshal refuses cannot be stored
		}
		e = c.entry()
		cs, ds = append(cs, c), append(ds, patchDeltaOf(r, &e))
	}
	return cs, ds
}

func TestPatchDeltaMatchesApply(t *testing.T) {
	cs, ds := patchCases(t, 20000)
	fast, applied := 0, 0
	for i := range cs {
		ok, err := checkPatch(cs[i], ds[i], patchDelta)
		if err != nil {
			t.Fatalf("case %d: entry %s, delta %+v: %v", i, cs[i].appendJSON(nil), ds[i], err)
		}
		if ok {
			fast++
			if _, a, _ := patchDelta(cs[i], ds[i]); a {
				applied++
			}
		}
	}
	// Most deltas take the fast path, and most of those apply: the
	// comparison above covered it.
	if fast < len(cs)/4 || applied < fast/2 {
		t.Fatalf("%d of %d deltas patched, %d applied", fast, len(cs), applied)
	}
	// The common counters update always does.
	for i, c := range cs {
		d := &delta{sessionID: c.str(fieldSessionID), in: 1, out: 2, total: 3, msgs: 1, ctxTokens: 7,
			model: c.str(fieldModel), provider: c.str(fieldProvider), updatedAt: time.Now().UTC()}
		if !writtenAsIs(d.model) || !writtenAsIs(d.provider) {
			continue
		}
		if ok, err := checkPatch(c, d, patchDelta); !ok || err != nil {
			t.Fatalf("case %d: counters update: fast %v, %v", i, ok, err)
		}
	}
}

// TestCheckPatchCatchesWrongPatches: the comparison fails a patch that
// gets any of the delta's fields, the session check, or the rest of the
// entry wrong.
func TestCheckPatchCatchesWrongPatches(t *testing.T) {
	cs, ds := patchCases(t, 2000)
	wrong := map[string]patchFunc{
		"input tokens dropped": func(c compactEntry, d *delta) (compactEntry, bool, bool) {
			dd := *d
			dd.in = 0
			return patchDelta(c, &dd)
		},
		"message count doubled": func(c compactEntry, d *delta) (compactEntry, bool, bool) {
			dd := *d
			dd.msgs *= 2
			return patchDelta(c, &dd)
		},
		"context tokens set when zero": func(c compactEntry, d *delta) (compactEntry, bool, bool) {
			dd := *d
			if dd.ctxTokens == 0 {
				dd.ctxTokens = 5
			}
			return patchDelta(c, &dd)
		},
		"model ignored": func(c compactEntry, d *delta) (compactEntry, bool, bool) {
			dd := *d
			dd.model = ""
			return patchDelta(c, &dd)
		},
		"updatedAt always set": func(c compactEntry, d *delta) (compactEntry, bool, bool) {
			out, applied, ok := patchDelta(c, d)
			if !ok || !applied {
				return out, applied, ok
			}
			e := out.entry()
			e.UpdatedAt = d.updatedAt
			p, err := packEntry(&e)
			return p, err == nil, err == nil
		},
		"session not checked": func(c compactEntry, d *delta) (compactEntry, bool, bool) {
			dd := *d
			dd.sessionID = c.str(fieldSessionID)
			return patchDelta(c, &dd)
		},
		"a field mutated": func(c compactEntry, d *delta) (compactEntry, bool, bool) {
			out, applied, ok := patchDelta(c, d)
			if !ok || !applied {
				return out, applied, ok
			}
			e := out.entry()
			e.Title += "x"
			p, err := packEntry(&e)
			return p, err == nil, err == nil
		},
		"unknown members dropped": func(c compactEntry, d *delta) (compactEntry, bool, bool) {
			out, applied, ok := patchDelta(c, d)
			if !ok || !applied {
				return out, applied, ok
			}
			e := out.entry()
			e.Extra = ""
			p, err := packEntry(&e)
			return p, err == nil, err == nil
		},
	}
	for name, patch := range wrong {
		caught := false
		for i := range cs {
			if _, err := checkPatch(cs[i], ds[i], patch); err != nil {
				caught = true
				break
			}
		}
		if !caught {
			t.Errorf("%s: no case caught it", name)
		}
	}
}

// BenchmarkAddCounters: one counters update of a cached entry, as
// AddCounters applies it (the flush is not part of it): of an entry whose
// strings are written as they are (the common one), and of sampleEntry,
// whose title json.Marshal escapes.
func BenchmarkAddCounters(b *testing.B) {
	plain := sampleEntry()
	plain.Title, plain.DeliveryContext.To = "Café 日本", "-10042"
	for _, bc := range []struct {
		name string
		e    sessions.Entry
	}{{"plain", plain}, {"escaped", sampleEntry()}} {
		b.Run(bc.name, func(b *testing.B) {
			e := bc.e
			e.Model, e.Provider, e.ContextTokens = "gpt-5", "openai", 1000
			c, err := packEntry(&e)
			if err != nil {
				b.Fatal(err)
			}
			s := &Store{slots: map[string]slot{"k": newSlot(c)}, changed: map[string]struct{}{}, pending: map[string]*delta{}}
			now := time.Date(2026, 3, 1, 4, 5, 6, 0, time.UTC)
			b.ReportAllocs()
			for i := range b.N {
				d := &delta{in: 10, out: 20, total: 30, msgs: 1, ctxTokens: 1200, model: "gpt-5", provider: "openai",
					updatedAt: now.Add(time.Duration(i) * time.Millisecond)}
				if !s.addDeltaLocked("k", d) {
					b.Fatal("not applied")
				}
			}
		})
	}
}
