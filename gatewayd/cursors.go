package gatewayd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/sessions"
)

// telegramCursors keeps the Telegram adapters' polling offsets and group
// migrations in the storage backend's cursors (channels/telegram cannot
// import sessions): scope "telegram:<account>", names "offset" and
// "migration:<old chat id>" (value: the new chat id).
//
// A daemon upgraded in place continues from what the files of earlier
// releases hold (telegram.FileStore, <stateDir>/telegram/<account>.offset
// and .migrations.json): the first read of an account whose offset cursor
// is unset imports them, migrations first and the offset last, so an
// import cut short by a crash is repeated whole. The legacy files are left
// as they are and never read again once the offset is set.
type telegramCursors struct {
	cursors sessions.Cursors
	legacy  *telegram.FileStore // nil: nothing to import
	log     *zap.Logger
}

var (
	_ telegram.OffsetStore    = (*telegramCursors)(nil)
	_ telegram.MigrationStore = (*telegramCursors)(nil)
)

// newTelegramCursors returns the offset store over c that imports the
// legacy files under legacyDir ("" for none) on first use.
func newTelegramCursors(c sessions.Cursors, legacyDir string, log *zap.Logger) *telegramCursors {
	if log == nil {
		log = zap.NewNop()
	}
	t := &telegramCursors{cursors: c, log: log}
	if legacyDir != "" {
		t.legacy = telegram.FileOffsetStore(legacyDir)
	}
	return t
}

const (
	offsetName      = "offset"
	migrationPrefix = "migration:"
)

func telegramScope(account string) string { return "telegram:" + account }

// Load implements telegram.OffsetStore; an unset offset is 0.
func (t *telegramCursors) Load(ctx context.Context, account string) (int, error) {
	v, ok, err := t.offset(ctx, account)
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("telegram offset of %s: stored value %q: %w", account, v, err)
	}
	return n, nil
}

// Save implements telegram.OffsetStore.
func (t *telegramCursors) Save(ctx context.Context, account string, offset int) error {
	if err := t.cursors.SetCursor(ctx, telegramScope(account), offsetName, strconv.Itoa(offset)); err != nil {
		return fmt.Errorf("telegram offset of %s: %w", account, err)
	}
	return nil
}

// LoadMigrations implements telegram.MigrationStore.
func (t *telegramCursors) LoadMigrations(ctx context.Context, account string) (map[int64]int64, error) {
	if _, _, err := t.offset(ctx, account); err != nil { // imports the legacy files once
		return nil, err
	}
	all, err := t.cursors.CursorsOf(ctx, telegramScope(account))
	if err != nil {
		return nil, fmt.Errorf("telegram migrations of %s: %w", account, err)
	}
	out := map[int64]int64{}
	for name, v := range all {
		old, ok := strings.CutPrefix(name, migrationPrefix)
		if !ok {
			continue
		}
		o, err1 := strconv.ParseInt(old, 10, 64)
		n, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("telegram migrations of %s: stored %q = %q is not two chat ids", account, name, v)
		}
		out[o] = n
	}
	return out, nil
}

// SaveMigration implements telegram.MigrationStore.
func (t *telegramCursors) SaveMigration(ctx context.Context, account string, oldID, newID int64) error {
	err := t.cursors.SetCursor(ctx, telegramScope(account), migrationPrefix+strconv.FormatInt(oldID, 10), strconv.FormatInt(newID, 10))
	if err != nil {
		return fmt.Errorf("telegram migration of %s: %w", account, err)
	}
	return nil
}

// offset returns account's offset cursor, importing the legacy files first
// when it is unset.
func (t *telegramCursors) offset(ctx context.Context, account string) (string, bool, error) {
	scope := telegramScope(account)
	v, ok, err := t.cursors.Cursor(ctx, scope, offsetName)
	if err != nil {
		return "", false, fmt.Errorf("telegram offset of %s: %w", account, err)
	}
	if ok || t.legacy == nil {
		return v, ok, nil
	}
	if err := t.importLegacy(ctx, account); err != nil {
		return "", false, err
	}
	return t.cursors.Cursor(ctx, scope, offsetName)
}

// importLegacy copies account's legacy offset and migrations into the
// cursors, the offset (even 0) last: once it is set, nothing is imported
// again.
func (t *telegramCursors) importLegacy(ctx context.Context, account string) error {
	off, err := t.legacy.Load(ctx, account)
	if err != nil {
		return fmt.Errorf("telegram offset of %s: import: %w", account, err)
	}
	migs, err := t.legacy.LoadMigrations(ctx, account)
	if err != nil {
		return fmt.Errorf("telegram offset of %s: import: %w", account, err)
	}
	for o, n := range migs {
		if err := t.SaveMigration(ctx, account, o, n); err != nil {
			return err
		}
	}
	if err := t.Save(ctx, account, off); err != nil {
		return err
	}
	if off != 0 || len(migs) != 0 {
		t.log.Info("telegram offset imported from the files of an earlier release",
			zap.String("account_id", account), zap.Int("offset", off), zap.Int("migrations", len(migs)))
	}
	return nil
}
