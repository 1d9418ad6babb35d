package pgstore

import (
	"testing"

	"github.com/pressly/goose/v3"
)

// migrationSources are the embedded migrations, oldest first.
func migrationSources(t *testing.T) []*goose.Source {
	t.Helper()
	db, _ := openTest(t)
	p, done, err := db.provider()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	return p.ListSources()
}
