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
	msg2 := `{"c":"]"}` + "\n"
	in := "banner line\n" + msg1 + "noise { not json\n\n" + strings.Repeat("z", 100) + "\n" + msg2 + "[{\"d\":1}]\n"
	j := &jsonLines{r: bufio.NewReaderSize(strings.NewReader(in), 16), log: zap.NewNop(), max: 1 << 20}
	out, err := io.ReadAll(j)
	if err != nil {
		t.Fatal(err)
	}
	if want := msg1 + "\n" + msg2 + "[{\"d\":1}]\n"; string(out) != want {
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
