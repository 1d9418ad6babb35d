package mcp

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// jsonLines drops noise only between messages: a message spread over
// lines (strings holding brackets, quotes and escapes) passes whole, and
// a long noise line is dropped across buffer refills.
func TestJSONLinesKeepsMessagesDropsNoise(t *testing.T) {
	msg1 := "{\n \"a\": \"x\\\"}\\n[\",\n \"b\": [1,\n2]\n}\n"
	msg2 := `{"jsonrpc":"2.0","c":"]"}` + "\n"
	msg3 := `[{"jsonrpc":"2.0","d":1}]` + "\n"
	in := "banner line\n" + msg1 + "noise { not json\n\n" + strings.Repeat("z", 100) + "\n" + msg2 + msg3
	j := &jsonLines{r: bufio.NewReaderSize(strings.NewReader(in), 16), log: zap.NewNop(), max: 1 << 20}
	out, err := io.ReadAll(j)
	if err != nil {
		t.Fatal(err)
	}
	if want := msg1 + "\n" + msg2 + msg3; string(out) != want {
		t.Fatalf("passed %q, want %q", out, want)
	}
}

// jsonLines passes messages up to max bytes and fails the read with
// errMessageTooLarge on a longer one, spread over lines or not, before
// holding it whole; noise lines do not count.
func TestJSONLinesCapsOneMessage(t *testing.T) {
	ok := `{"a":"` + strings.Repeat("y", 40) + `"}` + "\n" // 49 bytes
	in := strings.Repeat("noise\n", 20) + ok + ok + "{\n\"b\":\n\"" + strings.Repeat("z", 60) + "\"}\n" + ok
	j := &jsonLines{r: bufio.NewReaderSize(strings.NewReader(in), 16), log: zap.NewNop(), max: 50}
	out, err := io.ReadAll(j)
	if !errors.Is(err, errMessageTooLarge) {
		t.Fatalf("err = %v, want errMessageTooLarge", err)
	}
	if !strings.HasPrefix(string(out), ok+ok) || len(out) > len(ok+ok)+50 {
		t.Fatalf("passed %q", out)
	}
}

// Lines between messages that start like JSON but are no JSON-RPC message
// — a log line in brackets, text in braces, a JSON log record — are
// dropped as other noise is, where the SDK's reader ended the connection
// on them; a message on one line passes, and so does one spread over
// lines.
func TestJSONLinesDropsJSONLookingNoise(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"result":{"a":"[INFO] {x}"}}` + "\n"
	multi := "{\n\"jsonrpc\":\"2.0\",\n\"id\":2}\n"
	batch := `[ {"jsonrpc":"2.0","id":3,"result":{}} ]` + "\n"
	noise := []string{
		"[INFO] raw server started\n",
		"[2026-12-01 15:30:00] listening on [::1]:8080\n",
		"{not json}\n",
		`{"level":30,"msg":"listening"}` + "\n",
		`[DEBUG] sent {"jsonrpc":"2.0","id":9}` + "\n",
		`{"jsonrpc":"2.0","id":4} trailing` + "\n",
		"[INFO] config {\n",
	}
	in := strings.Join(noise, msg) + multi + "\r\n" + batch
	j := &jsonLines{r: bufio.NewReaderSize(strings.NewReader(in), 4096), log: zap.NewNop(), max: 1 << 20}
	out, err := io.ReadAll(j)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat(msg, len(noise)-1) + multi + "\r\n" + batch; string(out) != want {
		t.Fatalf("passed %q, want %q", out, want)
	}
}
