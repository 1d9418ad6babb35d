package pgstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestTimeArgumentsEncodeAsPgxDoes: timeCodec's encoding of a time.Time
// argument is byte for byte pgx's own, in the binary and text formats,
// before and after 1970 and 2000, with nanoseconds below a microsecond
// and in any zone; other timestamptz values still encode.
func TestTimeArgumentsEncodeAsPgxDoes(t *testing.T) {
	pgx, ours := pgtype.NewMap(), pgtype.NewMap()
	registerTimeCodec(ours)
	zone := time.FixedZone("X", -(9*3600 + 30*60))
	times := []time.Time{
		{},
		time.Unix(0, 0),
		time.Unix(-1, 999_999_999),
		time.Unix(-1, 1),
		time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 1, zone),
		time.Date(1900, 2, 28, 12, 0, 0, 123_456_789, zone),
		time.Date(2026, 12, 2, 1, 2, 3, 456_789_012, time.Local),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_000, time.UTC),
		time.Now(),
	}
	for _, tm := range times {
		for _, format := range []int16{pgtype.BinaryFormatCode, pgtype.TextFormatCode} {
			want, werr := pgx.Encode(pgtype.TimestamptzOID, format, tm, nil)
			got, gerr := ours.Encode(pgtype.TimestamptzOID, format, tm, nil)
			if !bytes.Equal(got, want) || (gerr == nil) != (werr == nil) {
				t.Errorf("%v format %d: %x, %v; pgx %x, %v", tm, format, got, gerr, want, werr)
			}
		}
	}
	for _, v := range []any{pgtype.Timestamptz{Time: times[5], Valid: true}, pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}, &times[6], (*time.Time)(nil)} {
		want, werr := pgx.Encode(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, v, nil)
		got, gerr := ours.Encode(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, v, nil)
		if !bytes.Equal(got, want) || (gerr == nil) != (werr == nil) {
			t.Errorf("%#v: %x, %v; pgx %x, %v", v, got, gerr, want, werr)
		}
	}
	allocs := func(m *pgtype.Map) float64 {
		return testing.AllocsPerRun(100, func() {
			_, _ = m.Encode(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, times[8], make([]byte, 0, 8))
		})
	}
	if got, want := allocs(ours), allocs(pgx); got != want-1 { // the time boxed once, not twice
		t.Errorf("encoding a time.Time allocates %v times, pgx %v", got, want)
	}
}

// TestTimeColumnsScanAsPgxDoes: timeCodec's scan of a binary timestamptz
// into a *time.Time gives pgx's time (same instant, same zone) or, for
// NULL, the infinities, a wrong length and a time out of pgx's range, an
// error as pgx's does; other destinations still scan.
func TestTimeColumnsScanAsPgxDoes(t *testing.T) {
	pgx, ours := pgtype.NewMap(), pgtype.NewMap()
	registerTimeCodec(ours)
	be := func(us int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(us)) }
	srcs := [][]byte{nil, {1, 2, 3}, be(0), be(1), be(-1), be(-946_684_800_000_001), be(1_000_000_123_456),
		be(-1_000_000_000_000_000), be(math.MaxInt64), be(math.MinInt64), be(math.MaxInt64 - 1), be(-211_813_488_000_000_001),
		be(-211_813_488_000_000_000), be(9_223_371_331_199_999_999), be(9_223_371_331_200_000_000)}
	for _, src := range srcs {
		var got, want time.Time
		werr := pgx.Scan(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, src, &want)
		gerr := ours.Scan(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, src, &got)
		if (gerr == nil) != (werr == nil) || !got.Equal(want) || got.Location() != want.Location() {
			t.Errorf("%x: %v, %v; pgx %v, %v", src, got, gerr, want, werr)
		}
		var gotTS, wantTS pgtype.Timestamptz
		werr = pgx.Scan(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, src, &wantTS)
		gerr = ours.Scan(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, src, &gotTS)
		if (gerr == nil) != (werr == nil) || gotTS != wantTS {
			t.Errorf("%x into Timestamptz: %v, %v; pgx %v, %v", src, gotTS, gerr, wantTS, werr)
		}
	}
	var p *time.Time
	if err := ours.Scan(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, be(42), &p); err != nil || p == nil || !p.Equal(time.Date(2000, 1, 1, 0, 0, 0, 42_000, time.UTC)) {
		t.Errorf("into **time.Time: %v, %v", p, err)
	}
	if err := ours.Scan(pgtype.TimestamptzOID, pgtype.BinaryFormatCode, nil, &p); err != nil || p != nil {
		t.Errorf("NULL into **time.Time: %v, %v", p, err)
	}
}

// TestTimeArgumentsRoundTrip: through the DB's connections (the codec
// registered on each), a time argument is the instant the server stores
// and gives back, to the microsecond.
func TestTimeArgumentsRoundTrip(t *testing.T) {
	db, err := Open(context.Background(), Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	for name, pool := range map[string]*pgxpool.Pool{"main": db.pool, "flush": db.flushPool, "lazy": db.lazyPool} {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if typ, ok := c.Conn().TypeMap().TypeForOID(pgtype.TimestamptzOID); !ok {
			t.Errorf("%s pool: no timestamptz type", name)
		} else if _, ours := typ.Codec.(*timeCodec); !ours {
			t.Errorf("%s pool: timestamptz codec %T, not timeCodec", name, typ.Codec)
		}
		c.Release()
	}
	in := time.Date(1969, 7, 20, 20, 17, 40, 123_456_789, time.FixedZone("X", 3600))
	var back time.Time
	var text string
	if err := db.pool.QueryRow(context.Background(), `SELECT $1::timestamptz, to_char($1::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')`, in).Scan(&back, &text); err != nil {
		t.Fatal(err)
	}
	if want := in.Truncate(time.Microsecond); !back.Equal(want) || text != "1969-07-20 19:17:40.123456" {
		t.Errorf("got %v (%s), want %v", back, text, want)
	}
	err = db.pool.QueryRow(context.Background(), `SELECT NULL::timestamptz`).Scan(&back)
	if err == nil {
		t.Error("NULL scanned into a time.Time")
	}
}
