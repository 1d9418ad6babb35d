package filestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// BenchmarkJobFireWithEndedJobs is one job's life (add, claim, settle
// done) on a store that holds 100,000 jobs that ended (issue 21: 2.18 s
// when jobs.json kept them, a rewrite of 41.9 MB a write). It reports the
// bytes of jobs.json each write rewrites.
func BenchmarkJobFireWithEndedJobs(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	writeJobsJSON(b, dir, endedJobs(100_000, endedT0)) // as a gateway that kept them there left it
	s := filestore.NewJobs(dir, 0)
	if err := s.AddJob(ctx, endedTestJob("jwarm", endedT0.Add(time.Hour))); err != nil { // moves them out once
		b.Fatal(err)
	}
	i := 0
	b.ResetTimer()
	for b.Loop() {
		j := endedTestJob(fmt.Sprintf("jbench%06d", i), endedT0)
		i++
		if err := s.AddJob(ctx, j); err != nil {
			b.Fatal(err)
		}
		js, _, err := s.ClaimDueJobs(ctx, endedT0, "bench", time.Minute, 10)
		if err != nil || len(js) != 1 {
			b.Fatalf("claim: %v, %v", js, err)
		}
		if err := s.SettleJob(ctx, j.ID, "bench", sessions.JobSettle{Fired: endedT0, State: sessions.JobDone, NextAt: endedT0}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(fileSize(b, filepath.Join(dir, "jobs.json"))), "jobs.json-bytes")
}
