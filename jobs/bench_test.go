package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// benchStore returns a job store of kind ("files" or "postgres") with n
// jobs pending far in the future, and extra.
func benchStore(b *testing.B, kind string, n int, extra ...sessions.Job) sessions.Jobs {
	b.Helper()
	now := time.Now()
	js := make([]sessions.Job, n)
	for i := range n {
		js[i] = job(fmt.Sprintf("p%05d", i), sessions.JobSchedule{At: now.Add(24*time.Hour + time.Duration(i)*time.Second)}, now)
	}
	js = append(js, extra...)
	n = len(js)
	var s sessions.Jobs
	switch kind {
	case "files":
		// Written as the file it is (adding 10,000 jobs one by one
		// rewrites the file 10,000 times).
		dir := b.TempDir()
		body, err := json.Marshal(map[string]any{"version": 1, "jobs": js})
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "jobs.json"), body, 0o600); err != nil {
			b.Fatal(err)
		}
		s = filestore.NewJobs(dir, 0)
	case "postgres":
		if os.Getenv(pgtest.EnvURL) == "" {
			b.Skip(pgtest.EnvURL + " is not set")
		}
		db, err := pgstore.Open(context.Background(), pgstore.Options{URL: pgtest.NewDatabase(b), MaxConns: 8})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(db.Close)
		s = db.Jobs()
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < n; i += 8 {
					if err := s.AddJob(context.Background(), js[i]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	return s
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSchedulerIdle10k is one poll (Tick) of a scheduler over
// 10,000 pending jobs none of which is due: the scheduler's idle cost is
// this once per jobs.poll (1 s by default).
func BenchmarkSchedulerIdle10k(b *testing.B) {
	for _, kind := range []string{"files", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			s := benchStore(b, kind, 10_000)
			sc, err := New(Options{Store: s, Owner: "bench", Deliver: func(context.Context, sessions.Job, time.Time, string) error { return nil }})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := sc.Tick(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSchedulerFire10k runs the scheduler (Run, default poll) over
// 10,000 pending jobs of which 500 fall due over 5 s, and reports how late
// they were delivered (p50, p99, max) and the process's CPU time per
// second of wall time while it ran (idle and firing together). Run it
// with -benchtime=1x.
func BenchmarkSchedulerFire10k(b *testing.B) {
	for _, kind := range []string{"files", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				start := time.Now().Add(20 * time.Second) // after the setup
				var due []sessions.Job
				for i := range 500 {
					due = append(due, job(fmt.Sprintf("d%05d", i), sessions.JobSchedule{At: start.Add(time.Duration(i) * 10 * time.Millisecond)}, time.Now()))
				}
				s := benchStore(b, kind, 10_000-500, due...)
				if wait := time.Until(start) - 2*time.Second; wait < 0 {
					b.Fatalf("setup took %s too long", -wait)
				} else {
					time.Sleep(wait) // the scheduler starts idle, 2 s before the first is due
				}
				var (
					mu   sync.Mutex
					late []time.Duration
				)
				all := make(chan struct{})
				sc, err := New(Options{Store: s, Owner: "bench", Deliver: func(_ context.Context, _ sessions.Job, at time.Time, _ string) error {
					mu.Lock()
					defer mu.Unlock()
					late = append(late, time.Since(at))
					if len(late) == 500 {
						close(all)
					}
					return nil
				}})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				cpu0, wall0 := cpuTime(), time.Now()
				go func() { defer close(done); _ = sc.Run(ctx) }()
				select {
				case <-all:
				case <-time.After(2 * time.Minute):
					b.Fatal("not all fired")
				}
				cpu, wall := cpuTime()-cpu0, time.Since(wall0)
				cancel()
				<-done
				slices.Sort(late)
				b.ReportMetric(float64(late[len(late)/2].Milliseconds()), "p50-ms")
				b.ReportMetric(float64(late[len(late)*99/100].Milliseconds()), "p99-ms")
				b.ReportMetric(float64(late[len(late)-1].Milliseconds()), "max-ms")
				b.ReportMetric(float64(cpu.Milliseconds())/wall.Seconds(), "cpu-ms/s")
			}
		})
	}
}
