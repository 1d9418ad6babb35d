package transcript

import (
	"bytes"
	"testing"
	"time"
)

// TestEncodeHeaderIsTheJSONLine: EncodeHeader's hand-built session line is
// byte for byte encoding/json's (encodeHeader's, without its newline),
// for empty and set fields, HTML characters, quotes, control characters,
// invalid UTF-8, U+2028 and zones other than UTC.
func TestEncodeHeaderIsTheJSONLine(t *testing.T) {
	zone := time.FixedZone("X", 5*3600+45*60)
	headers := []Header{
		{},
		{SessionKey: "agent:main:telegram:direct:10001", AgentID: "main"},
		{Cwd: "/srv/<bot> & \"co\"", SessionKey: "k\x00\x1f\u2028\u2029", AgentID: "é日本\xff"},
		{Cwd: "\\path\t\n", AgentID: "a"},
	}
	times := []time.Time{time.Unix(0, 0), time.Date(2026, 3, 29, 1, 59, 59, 999_999_999, zone), time.Now()}
	for _, h := range headers {
		for _, now := range times {
			var buf bytes.Buffer
			if err := encodeHeader(&buf, "0b6f3c1e-7a52-4e0f-9d8a-2c4b1e7f9a30", h, now); err != nil {
				t.Fatal(err)
			}
			want := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
			got, err := EncodeHeader("0b6f3c1e-7a52-4e0f-9d8a-2c4b1e7f9a30", h, now)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%+v at %v:\n got %s, %v\nwant %s", h, now, got, err, want)
			}
		}
	}
}
