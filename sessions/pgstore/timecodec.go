package pgstore

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// timeCodec is pgx's timestamptz codec with an encode plan of its own for
// a time.Time argument in the binary format, the daemon's every timestamp
// argument: pgx's plan wraps the time in a type of its own and boxes it,
// an allocation per argument, a dozen a message (issue 21). The bytes are
// pgx's: microseconds since 2000-01-01 UTC, big-endian.
type timeCodec struct{ pgtype.TimestamptzCodec }

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
