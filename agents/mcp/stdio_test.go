package mcp

import (
	"bufio"
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
	j := &jsonLines{r: bufio.NewReaderSize(strings.NewReader(in), 16), log: zap.NewNop()}
	out, err := io.ReadAll(j)
	if err != nil {
		t.Fatal(err)
	}
	if want := msg1 + "\n" + msg2 + "[{\"d\":1}]\n"; string(out) != want {
		t.Fatalf("passed %q, want %q", out, want)
	}
}
