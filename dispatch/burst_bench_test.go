package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkBurstSingleMessage measures how long a message from a sender
// who is not mid-burst waits before its turn starts (Handle to the model
// call), with burst assembly off and with a 50 ms window: the difference
// must be the window, nothing more. "off-idle" pauses 50 ms (untimed)
// before each message, so it compares with the window case on equal terms
// (the daemon's goroutines idle through the window). Reported: start_ms
// (mean wait) and beyond_window_ms (mean wait minus the window).
func BenchmarkBurstSingleMessage(b *testing.B) {
	cases := []struct {
		name          string
		window, pause time.Duration
	}{
		{"off", 0, 0},
		{"off-idle", 0, 50 * time.Millisecond},
		{"window=50ms", 50 * time.Millisecond, 0},
	}
	for _, tc := range cases {
		window := tc.window
		b.Run(tc.name, func(b *testing.B) {
			m := &model{started: make(chan struct{}, 1)}
			d, _ := benchDispatcher(b, m, Runtime{Queue: QueueConfig{Mode: "followup"}, Inbound: burstCfg(window, 0)})
			tg := &chat{name: "tg"}
			d.Register(tg)
			var total time.Duration
			b.ResetTimer()
			for i := range b.N {
				if tc.pause > 0 {
					b.StopTimer()
					time.Sleep(tc.pause)
					b.StartTimer()
				}
				start := time.Now()
				if err := d.Handle(context.Background(), in("tg", fmt.Sprint(900000+i), "hello")); err != nil {
					b.Fatal(err)
				}
				<-m.started
				total += time.Since(start)
			}
			b.StopTimer()
			mean := total / time.Duration(b.N)
			b.ReportMetric(float64(mean)/1e6, "start_ms")
			b.ReportMetric(float64(mean-window)/1e6, "beyond_window_ms")
		})
	}
}
