package pgstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// timeCodec is pgx's timestamptz codec with plans of its own for a
// time.Time argument and a *time.Time destination in the binary format,
// the daemon's every timestamp: pgx's encode plan wraps the time in a type
// of its own and boxes it, an allocation per argument, and its scan plan
// is two allocated plans per column and query (issue 21). The bytes and
// the times are pgx's: microseconds since 2000-01-01 UTC, big-endian,
// scanned in the local zone; NULL and infinities are errors.
type timeCodec struct{ pgtype.TimestamptzCodec }

// PlanScan is scanTimeBinary for a *time.Time in the binary format, else
// pgx's plan.
func (c *timeCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*time.Time); ok && format == pgtype.BinaryFormatCode {
		return scanTimeBinary{}
	}
	return c.TimestamptzCodec.PlanScan(m, oid, format, target)
}

// The range of timestamptz pgx scans (pgtype's minDateTime and
// endTimestamp), and its infinities.
var (
	minScanTime = time.Date(-4713, 11, 24, 0, 0, 0, 0, time.UTC)
	endScanTime = time.Date(294277, 1, 1, 0, 0, 0, 0, time.UTC)
)

const (
	infinityMicros         = math.MaxInt64
	negativeInfinityMicros = math.MinInt64
)

// scanTimeBinary scans a binary timestamptz into a *time.Time.
type scanTimeBinary struct{}

func (scanTimeBinary) Scan(src []byte, dst any) error {
	if src == nil {
		return errors.New("cannot scan NULL into *time.Time")
	}
	if len(src) != 8 {
		return fmt.Errorf("timestamptz: invalid length: expected 8 bytes, got %d", len(src))
	}
	us := int64(binary.BigEndian.Uint64(src))
	switch us {
	case infinityMicros:
		return errors.New("cannot scan Infinity into *time.Time")
	case negativeInfinityMicros:
		return errors.New("cannot scan -Infinity into *time.Time")
	}
	t := time.Unix(y2kMicros/1_000_000+us/1_000_000, (y2kMicros%1_000_000*1_000)+(us%1_000_000*1_000))
	if t.Before(minScanTime) || !t.Before(endScanTime) {
		return fmt.Errorf("timestamptz %d microseconds from 2000-01-01 is out of range", us)
	}
	*dst.(*time.Time) = t
	return nil
}

// PlanEncode is encodeTimeBinary for a time.Time in the binary format,
// else pgx's plan.
func (c *timeCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(time.Time); ok && format == pgtype.BinaryFormatCode {
		return encodeTimeBinary{}
	}
	return c.TimestamptzCodec.PlanEncode(m, oid, format, value)
}

// y2kMicros is 2000-01-01 UTC in microseconds since the Unix epoch.
const y2kMicros = 946_684_800 * 1_000_000

// encodeTimeBinary encodes a time.Time as a binary timestamptz.
type encodeTimeBinary struct{}

func (encodeTimeBinary) Encode(value any, buf []byte) ([]byte, error) {
	t := value.(time.Time)
	us := t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - y2kMicros
	return binary.BigEndian.AppendUint64(buf, uint64(us)), nil
}

// useTimeCodec makes conn encode timestamptz arguments with timeCodec (a
// pool's AfterConnect).
func useTimeCodec(_ context.Context, conn *pgx.Conn) error {
	registerTimeCodec(conn.TypeMap())
	return nil
}

// registerTimeCodec registers timeCodec for timestamptz in m.
func registerTimeCodec(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID, Codec: &timeCodec{}})
}
