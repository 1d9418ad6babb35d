package pgstore

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// BenchmarkTranscriptTurn is a turn's transcript work with the session's
// chain cached: AppendLazyContext of the user's input (the model's
// context comes back with it), then Append of the reply. Each session
// starts with 30 messages and takes 50 turns before the next one starts.
// cpu-µs/op is the process's CPU time (user and system, all goroutines)
// over the turns, what ns/op (mostly waiting for the server) hides.
func BenchmarkTranscriptTurn(b *testing.B) {
	db := openBench(b, 4)
	ctx := context.Background()
	hdr := transcript.Header{SessionKey: "agent:main:main", AgentID: "main"}
	var tr *TranscriptLog
	sessionsUsed, turns := 0, 0
	start := func() {
		b.StopTimer()
		defer b.StartTimer()
		var err error
		tr, err = db.Transcript(fmt.Sprintf("4f7c2a9e-0000-4000-8000-%012x", sessionsUsed+100), hdr)
		if err != nil {
			b.Fatal(err)
		}
		sessionsUsed, turns = sessionsUsed+1, 0
		for i := range 15 {
			if _, err := tr.Append(ctx, text(sessions.RoleUser, fmt.Sprint("question ", i)), text(sessions.RoleAssistant, "a reply of some length")); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := tr.Context(ctx); err != nil { // the turn before's
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	start()
	var cpu time.Duration
	for b.Loop() {
		if turns == 50 {
			start()
		}
		turns++
		cpu0 := processCPU()
		if _, c, err := tr.AppendLazyContext(ctx, text(sessions.RoleUser, "a message of a few words")); err != nil || len(c.Messages) == 0 {
			b.Fatal(err, len(c.Messages))
		}
		if _, err := tr.Append(ctx, text(sessions.RoleAssistant, "a reply of a few words")); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - cpu0
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU time this process has used (0 where unknown).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
