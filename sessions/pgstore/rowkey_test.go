package pgstore

import (
	"strings"
	"testing"
)

// TestRowKeyJoinsTableAndIDs: a row's key is its table and ids joined by
// NUL bytes (so keys of different rows differ, and sort by table first),
// made in one allocation.
func TestRowKeyJoinsTableAndIDs(t *testing.T) {
	for _, id := range [][]string{nil, {""}, {"a"}, {"agent", "key:with\x00nul"}, {"", "", "x"}, {"é", "日本"}} {
		if got, want := rowKey("e", id...), "e\x00"+strings.Join(id, "\x00"); got != want {
			t.Errorf("rowKey(e, %q) = %q, want %q", id, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = rowKey("e", "main", "agent:main:telegram:direct:10001") }); n > 1 {
		t.Errorf("rowKey allocates %v times", n)
	}
}
