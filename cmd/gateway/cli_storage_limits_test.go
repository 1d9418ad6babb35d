package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sqlitestore"
)

// TestStorageMigrateCarriesBudgetCounters: a member's daily budget spent
// on the files backend is still spent after `storage migrate` to postgres
// and on to sqlite (before, the counters stayed behind and every budget
// started again from zero); a second run adds nothing twice.
func TestStorageMigrateCarriesBudgetCounters(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	seed(t, state, time.Now(), []string{"hello"})
	day := time.Now().UTC().Truncate(24 * time.Hour).Unix()
	spent := []sessions.LimitDelta{
		{Key: sessions.LimitKey{Scope: "sender", Subject: "telegram:42:main", Period: "day", Start: day}, End: day + 86400, Tokens: 9000, CostUSD: 1.25},
		{Key: sessions.LimitKey{Scope: "agent", Subject: "main", Period: "month", Start: day - 86400}, End: day + 29*86400, Tokens: 123456, CostUSD: 7.5},
	}
	if _, err := filestore.NewLimits(filepath.Join(state, "limits"), 0).AddUsage(ctx, spent); err != nil {
		t.Fatal(err)
	}
	url := pgtest.NewDatabase(t)
	cfg := writeConfig(t, state, "", "")
	for range 2 {
		r := gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url).want(t, 0)
		t.Logf("files -> postgres:\n%s", r.Stdout)
	}
	sqlDir := t.TempDir()
	r := gw(t, cfg, "storage", "migrate", "--from", "postgres", "--to", "sqlite", "--postgres-url", url, "--sqlite-state-dir", sqlDir).want(t, 0)
	if !strings.Contains(r.Stdout, "budget counters") {
		t.Errorf("postgres -> sqlite does not report the budget counters:\n%s", r.Stdout)
	}
	keys := []sessions.LimitKey{spent[0].Key, spent[1].Key}
	want := func(name string, got map[sessions.LimitKey]sessions.LimitTotal) {
		t.Helper()
		for _, d := range spent {
			if g := got[d.Key]; g.Tokens != d.Tokens || g.CostUSD != d.CostUSD {
				t.Errorf("%s: counter %+v = %+v, want %d tokens, $%v", name, d.Key, g, d.Tokens, d.CostUSD)
			}
		}
	}
	db, err := pgstore.Open(ctx, pgstore.Options{URL: url, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Limits().LimitUsage(ctx, keys)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	want("postgres", got)
	sq, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: sqlitestore.PathIn(sqlDir), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	if got, err = sq.Limits().LimitUsage(ctx, keys); err != nil {
		t.Fatal(err)
	}
	want("sqlite", got)
}
