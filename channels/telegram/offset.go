package telegram

import (
	"github.com/gateway/gateway/internal/atomicfile"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// OffsetStore persists the getUpdates offset of each account: the id of
// the first update not yet accepted. Save is called only with offsets whose
// every earlier update was accepted, so a restart never skips one.
type OffsetStore interface {
	Load(ctx context.Context, account string) (int, error)
	Save(ctx context.Context, account string, offset int) error
}

// MigrationStore is implemented by offset stores that also persist group →
// supergroup migrations (old chat id → new chat id) of an account.
type MigrationStore interface {
	LoadMigrations(ctx context.Context, account string) (map[int64]int64, error)
	SaveMigration(ctx context.Context, account string, oldID, newID int64) error
}

// MemoryOffsetStore keeps offsets and migrations in memory (tests, or a
// deployment that relies on Telegram's own offset only).
type MemoryOffsetStore struct {
	mu         sync.Mutex
	offsets    map[string]int             // guarded by mu
	migrations map[string]map[int64]int64 // guarded by mu
}

var (
	_ OffsetStore    = (*MemoryOffsetStore)(nil)
	_ MigrationStore = (*MemoryOffsetStore)(nil)
	_ OffsetStore    = (*FileStore)(nil)
	_ MigrationStore = (*FileStore)(nil)
)

// Load implements OffsetStore.
func (s *MemoryOffsetStore) Load(_ context.Context, account string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offsets[account], nil
}

// Save implements OffsetStore.
func (s *MemoryOffsetStore) Save(_ context.Context, account string, offset int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.offsets == nil {
		s.offsets = map[string]int{}
	}
	s.offsets[account] = offset
	return nil
}

// LoadMigrations implements MigrationStore.
func (s *MemoryOffsetStore) LoadMigrations(_ context.Context, account string) (map[int64]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int64]int64{}
	for k, v := range s.migrations[account] {
		out[k] = v
	}
	return out, nil
}

// SaveMigration implements MigrationStore.
func (s *MemoryOffsetStore) SaveMigration(_ context.Context, account string, oldID, newID int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.migrations == nil {
		s.migrations = map[string]map[int64]int64{}
	}
	if s.migrations[account] == nil {
		s.migrations[account] = map[int64]int64{}
	}
	s.migrations[account][oldID] = newID
	return nil
}

// FileStore keeps each account's offset in <dir>/<account>.offset and its
// migrations in <dir>/<account>.migrations.json, written atomically
// (temporary file, fsync, rename, directory fsync; files 0600, dir 0700).
type FileStore struct {
	dir string
	mu  sync.Mutex // serialises read-modify-write of the migrations file
}

// FileOffsetStore returns a FileStore in dir (created on first write).
func FileOffsetStore(dir string) *FileStore { return &FileStore{dir: dir} }

func (s *FileStore) path(account, suffix string) (string, error) {
	if account == "" || strings.ContainsAny(account, `/\:`) || strings.Contains(account, "..") {
		return "", fmt.Errorf("telegram: offset store: invalid account id %q", account)
	}
	return filepath.Join(s.dir, account+suffix), nil
}

// Load implements OffsetStore; a missing file is offset 0.
func (s *FileStore) Load(_ context.Context, account string) (int, error) {
	p, err := s.path(account, ".offset")
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("telegram: load offset: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("telegram: load offset %s: %w", p, err)
	}
	return n, nil
}

// Save implements OffsetStore.
func (s *FileStore) Save(_ context.Context, account string, offset int) error {
	p, err := s.path(account, ".offset")
	if err != nil {
		return err
	}
	if err := writeAtomic(p, []byte(strconv.Itoa(offset)+"\n")); err != nil {
		return fmt.Errorf("telegram: save offset: %w", err)
	}
	return nil
}

// LoadMigrations implements MigrationStore.
func (s *FileStore) LoadMigrations(_ context.Context, account string) (map[int64]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loadMigrationsLocked(account)
}

func (s *FileStore) loadMigrationsLocked(account string) (map[int64]int64, error) {
	p, err := s.path(account, ".migrations.json")
	if err != nil {
		return nil, err
	}
	out := map[int64]int64{}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("telegram: load migrations: %w", err)
	}
	var raw map[string]int64
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("telegram: load migrations %s: %w", p, err)
	}
	for k, v := range raw {
		id, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("telegram: load migrations %s: key %q: %w", p, k, err)
		}
		out[id] = v
	}
	return out, nil
}

// SaveMigration implements MigrationStore.
func (s *FileStore) SaveMigration(_ context.Context, account string, oldID, newID int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.loadMigrationsLocked(account)
	if err != nil {
		return err
	}
	if m[oldID] == newID {
		return nil
	}
	m[oldID] = newID
	raw := make(map[string]int64, len(m))
	for k, v := range m {
		raw[strconv.FormatInt(k, 10)] = v
	}
	b, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		return fmt.Errorf("telegram: save migration: %w", err)
	}
	p, _ := s.path(account, ".migrations.json")
	if err := writeAtomic(p, append(b, '\n')); err != nil {
		return fmt.Errorf("telegram: save migration: %w", err)
	}
	return nil
}

// writeAtomic replaces path with data (0600, its directory created 0700)
// so a crash leaves the old or the new content, never a torn file.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, 0o600)
}

// loadMigrations fills the migration maps from the store, if it keeps them.
func (a *Adapter) loadMigrations(ctx context.Context) error {
	ms, ok := a.opts.OffsetStore.(MigrationStore)
	if !ok {
		return nil
	}
	m, err := ms.LoadMigrations(ctx, a.account)
	if err != nil {
		return err
	}
	a.migMu.Lock()
	defer a.migMu.Unlock()
	for o, n := range m {
		a.toNew[o] = n
	}
	return nil
}

// recordMigration notes that group oldID became supergroup newID: a late
// message of oldID is reported under newID, and Send to oldID goes to
// newID. Repeated events change nothing.
func (a *Adapter) recordMigration(oldID, newID int64) {
	a.migMu.Lock()
	if a.toNew[oldID] == newID {
		a.migMu.Unlock()
		return
	}
	a.toNew[oldID] = newID
	a.migMu.Unlock()
	a.log.Info("telegram group migrated to supergroup", zap.Int64("chat_id", oldID), zap.Int64("new_chat_id", newID))
	if ms, ok := a.opts.OffsetStore.(MigrationStore); ok {
		if err := ms.SaveMigration(context.Background(), a.account, oldID, newID); err != nil {
			a.log.Error("saving group migration failed", zap.Error(err))
		}
	}
}

// movedEvent is the Inbound that tells the Handler group oldID is now
// supergroup newID (channels.EventMoved): the dispatcher moves the
// group's session to the supergroup's key. It is delivered for each of
// the two service messages and again at each start (replayMigrations);
// moving is idempotent.
func (a *Adapter) movedEvent(oldID, newID int64) channels.Inbound {
	return channels.Inbound{
		Address:  channels.Address{Channel: Name, AccountID: a.account, ChatID: strconv.FormatInt(oldID, 10)},
		ChatType: channels.Group, CaseSensitive: true,
		Event: &channels.Event{Kind: channels.EventMoved, ChatID: strconv.FormatInt(newID, 10)},
	}
}

// replayMigrations hands h every migration the store knows, oldest group
// id first, so a session that did not follow its group (a crash between
// recording the migration and moving the session, or state from a release
// that kept reporting the old id) follows it now. A failure is logged: the
// next start tries again.
func (a *Adapter) replayMigrations(ctx context.Context, h channels.Handler) {
	a.migMu.Lock()
	olds := make([]int64, 0, len(a.toNew))
	for o := range a.toNew {
		olds = append(olds, o)
	}
	a.migMu.Unlock()
	slices.Sort(olds)
	for _, o := range olds {
		n := a.liveChatID(o)
		if err := h(ctx, a.movedEvent(o, n)); err != nil && !errors.Is(err, channels.ErrRejected) && ctx.Err() == nil {
			a.log.Warn("moving a migrated group's session failed; retried at the next start",
				zap.Int64("chat_id", o), zap.Int64("new_chat_id", n), zap.Error(err))
		}
	}
}

// migratedInto returns the group ids that were migrated to live, directly
// or through a supergroup migrated again, in ascending order.
func (a *Adapter) migratedInto(live int64) []int64 {
	a.migMu.Lock()
	olds := make([]int64, 0, len(a.toNew))
	for o := range a.toNew {
		olds = append(olds, o)
	}
	a.migMu.Unlock()
	var out []int64
	for _, o := range olds {
		if o != live && a.liveChatID(o) == live {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return out
}

// liveChatID maps a (possibly migrated) chat id to the live one, following
// a supergroup that was migrated again.
func (a *Adapter) liveChatID(id int64) int64 {
	a.migMu.Lock()
	defer a.migMu.Unlock()
	for range 4 {
		n, ok := a.toNew[id]
		if !ok || n == id {
			break
		}
		id = n
	}
	return id
}
