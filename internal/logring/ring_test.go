package logring

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestRingKeepsTheLastLinesAndFeedsFollowers(t *testing.T) {
	r := New(3)
	log := zap.New(r.Core(zapcore.InfoLevel))
	log.Debug("not kept")
	for i := range 5 {
		log.Info("line", zap.Int("n", i))
	}
	var got []int
	for _, l := range r.Last(10) {
		var e struct{ N int }
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got = append(got, e.N)
	}
	if fmt.Sprint(got) != "[2 3 4]" {
		t.Errorf("last = %v, want [2 3 4]", got)
	}
	if n := len(r.Last(2)); n != 2 {
		t.Errorf("Last(2) gave %d lines", n)
	}

	recent, f := r.Follow(1)
	defer f.Stop()
	if len(recent) != 1 || !strings.Contains(string(recent[0]), `"n":4`) {
		t.Errorf("recent = %q", recent)
	}
	log.Warn("after")
	if l := <-f.Lines(); !strings.Contains(string(l), `"msg":"after"`) {
		t.Errorf("followed %q", l)
	}
	for range followBuffer + 5 {
		log.Info("flood")
	}
	if d := f.Dropped(); d != 5 {
		t.Errorf("dropped %d, want 5", d)
	}
}
