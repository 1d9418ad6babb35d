package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

const testRoom = "agent:main:telegram:group:-100"

func openTestHistory(t *testing.T, dir string) *RoomHistory {
	t.Helper()
	h := OpenRoomHistory(dir, zaptest.NewLogger(t))
	if h.openErr != nil {
		t.Fatal(h.openErr)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func addN(t *testing.T, h *RoomHistory, room string, from, n int, lim sessions.HistoryLimits) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := h.Append(context.Background(), room, sessions.HistoryEntry{MessageID: fmt.Sprint(i), SenderID: "7",
			SenderName: "Ann", At: time.Unix(int64(1000+i), 0), Text: fmt.Sprintf("m%d", i)}, lim); err != nil {
			t.Fatal(err)
		}
	}
}

func texts(t *testing.T, h *RoomHistory, room string, upTo uint64, lim sessions.HistoryLimits) []string {
	t.Helper()
	ents, err := h.Take(room, upTo, lim)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Text)
	}
	return out
}

func TestRoomHistoryBounds(t *testing.T) {
	tests := []struct {
		name string
		lim  sessions.HistoryLimits
		n    int
		want string
	}{
		{"count evicts oldest", sessions.HistoryLimits{Count: 3, MaxBytes: 1000}, 6, "m3 m4 m5"},
		{"bytes evict oldest", sessions.HistoryLimits{Count: 50, MaxBytes: 7}, 6, "m3 m4 m5"},
		{"under both", sessions.HistoryLimits{Count: 10, MaxBytes: 1000}, 4, "m0 m1 m2 m3"},
		{"zero keeps nothing", sessions.HistoryLimits{Count: 0, MaxBytes: 1000}, 4, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := openTestHistory(t, t.TempDir())
			addN(t, h, testRoom, 0, tc.n, tc.lim)
			got := strings.Join(texts(t, h, testRoom, h.Seq(), sessions.HistoryLimits{Count: 200}), " ")
			if got != tc.want {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
			// What is kept on disk is what a restart sees.
			_ = h.Close()
			h2 := openTestHistory(t, filepath.Dir(h.path))
			if got2 := strings.Join(texts(t, h2, testRoom, h2.Seq(), sessions.HistoryLimits{Count: 200}), " "); got2 != got {
				t.Errorf("after reopen kept %q, want %q", got2, got)
			}
		})
	}
}

func TestRoomHistoryTakeWindow(t *testing.T) {
	h := openTestHistory(t, t.TempDir())
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 1 << 10}
	addN(t, h, testRoom, 0, 5, lim)
	mark := h.Seq()
	addN(t, h, testRoom, 5, 2, lim)
	addN(t, h, "agent:main:telegram:group:-200", 100, 3, lim)
	if got := strings.Join(texts(t, h, testRoom, mark, lim), " "); got != "m0 m1 m2 m3 m4" {
		t.Errorf("up to the mark: %q", got)
	}
	// A lowered limit (hot reload) takes the newest within it.
	if got := strings.Join(texts(t, h, testRoom, mark, sessions.HistoryLimits{Count: 2, MaxBytes: 100}), " "); got != "m3 m4" {
		t.Errorf("limit 2: %q", got)
	}
	if got := strings.Join(texts(t, h, testRoom, mark, sessions.HistoryLimits{Count: 50, MaxBytes: 4}), " "); got != "m3 m4" {
		t.Errorf("4 bytes: %q", got)
	}
	ents, _ := h.Take(testRoom, mark, lim)
	if e := ents[0]; e.SenderName != "Ann" || e.SenderID != "7" || e.MessageID != "0" || !e.At.Equal(time.Unix(1000, 0)) {
		t.Errorf("entry fields: %+v", e)
	}
	if err := h.Cut(testRoom, ents[len(ents)-1].Seq); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(texts(t, h, testRoom, h.Seq(), lim), " "); got != "m5 m6" {
		t.Errorf("after cut: %q", got)
	}
	if err := h.Clear(testRoom); err != nil {
		t.Fatal(err)
	}
	if n := h.Len(testRoom); n != 0 {
		t.Errorf("%d entries after clear", n)
	}
	if n := h.Len("agent:main:telegram:group:-200"); n != 3 {
		t.Errorf("other room has %d entries, want 3", n)
	}
}

func TestRoomHistoryDuplicateAndTruncation(t *testing.T) {
	h := openTestHistory(t, t.TempDir())
	lim := sessions.HistoryLimits{Count: 5, MaxBytes: 6}
	e := sessions.HistoryEntry{MessageID: "42", SenderName: "Bo", Text: "héllo world"}
	if dup, err := h.Append(context.Background(), testRoom, e, lim); err != nil || dup {
		t.Fatalf("first append: dup %v err %v", dup, err)
	}
	if dup, err := h.Append(context.Background(), testRoom, e, lim); err != nil || !dup {
		t.Fatalf("redelivery: dup %v err %v, want dup", dup, err)
	}
	if got := texts(t, h, testRoom, h.Seq(), lim); len(got) != 1 || got[0] != "héllo" {
		t.Errorf("kept %q, want one entry cut to 6 bytes on a rune boundary", got)
	}
	// Taken and cut, then redelivered (the platform's ack had not reached
	// it before a crash): still a duplicate, also after a restart.
	if err := h.Cut(testRoom, h.Seq()); err != nil {
		t.Fatal(err)
	}
	if dup, err := h.Append(context.Background(), testRoom, e, lim); err != nil || !dup {
		t.Fatalf("redelivery after cut: dup %v err %v, want dup", dup, err)
	}
	_ = h.Close()
	h = openTestHistory(t, filepath.Dir(h.path))
	if dup, err := h.Append(context.Background(), testRoom, e, lim); err != nil || !dup {
		t.Fatalf("redelivery after restart: dup %v err %v, want dup", dup, err)
	}
	// The same message id in another room is another message.
	if dup, err := h.Append(context.Background(), "agent:main:telegram:group:-5", e, lim); err != nil || dup {
		t.Fatalf("other room: dup %v err %v", dup, err)
	}
}

// TestRoomHistoryBatchSharesOneFsync: messages an adapter acknowledges
// together are written at once and made durable by one fsync.
func TestRoomHistoryBatchSharesOneFsync(t *testing.T) {
	h := openTestHistory(t, t.TempDir())
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 1 << 10}
	var waits []func() error
	for i := range 20 {
		_, wait, err := h.Add(context.Background(), testRoom, sessions.HistoryEntry{MessageID: fmt.Sprint(i), Text: "x"}, lim)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, wait)
	}
	before := h.Stats().Fsyncs
	for _, w := range waits {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.Stats().Fsyncs - before; n != 1 {
		t.Errorf("%d fsyncs for a batch of 20, want 1", n)
	}
}

func TestRoomHistoryTornTail(t *testing.T) {
	dir := t.TempDir()
	h := openTestHistory(t, dir)
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 1 << 10}
	addN(t, h, testRoom, 0, 3, lim)
	seq := h.Seq()
	_ = h.Close()
	path := filepath.Join(dir, historyFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	torn := `{"op":"add","seq":99,"room":"` + testRoom + `","text":"half`
	if err := os.WriteFile(path, append(append([]byte{}, good...), torn...), 0o600); err != nil {
		t.Fatal(err)
	}
	h = openTestHistory(t, dir)
	if got := strings.Join(texts(t, h, testRoom, 1<<62, lim), " "); got != "m0 m1 m2" || h.Seq() != seq {
		t.Errorf("after torn tail: %q seq %d, want m0 m1 m2 seq %d", got, h.Seq(), seq)
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(len(good)) {
		t.Errorf("torn tail not cut off: size %d, want %d", fi.Size(), len(good))
	}
	addN(t, h, testRoom, 3, 1, lim)
	_ = h.Close()
	h = openTestHistory(t, dir)
	if got := strings.Join(texts(t, h, testRoom, 1<<62, lim), " "); got != "m0 m1 m2 m3" {
		t.Errorf("append after a torn tail: %q", got)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
}

func TestRoomHistoryCompaction(t *testing.T) {
	dir := t.TempDir()
	h := openTestHistory(t, dir)
	h.compactMin = 2 << 10
	lim := sessions.HistoryLimits{Count: 4, MaxBytes: 1 << 10}
	rooms := []string{testRoom, "agent:main:discord:channel:9", "agent:main:discord:channel:9:thread:10"}
	for i := range 300 {
		addN(t, h, rooms[i%3], i, 1, lim)
	}
	if err := h.Cut(rooms[1], h.Seq()); err != nil {
		t.Fatal(err)
	}
	st := h.Stats()
	if st.FileBytes > 4*(st.LiveBytes+h.compactMin) {
		t.Errorf("log not compacted: %d bytes for %d live", st.FileBytes, st.LiveBytes)
	}
	want := map[string]string{}
	for _, r := range rooms {
		want[r] = strings.Join(texts(t, h, r, h.Seq(), lim), " ")
	}
	if want[testRoom] != "m288 m291 m294 m297" || want[rooms[1]] != "" {
		t.Errorf("kept %q", want)
	}
	seq := h.Seq()
	_ = h.Close()
	h = openTestHistory(t, dir)
	if h.Seq() != seq {
		t.Errorf("sequence after reopen %d, want %d (never goes back)", h.Seq(), seq)
	}
	for _, r := range rooms {
		if got := strings.Join(texts(t, h, r, h.Seq(), lim), " "); got != want[r] {
			t.Errorf("%s after reopen: %q, want %q", r, got, want[r])
		}
	}
}

// TestRoomHistoryCrashBetweenConsumeSteps: a turn appended its user message
// (which records the history sequence it took) and the process died before
// the history was cut. The transcript tells recovery where to cut.
func TestRoomHistoryCrashBetweenConsumeSteps(t *testing.T) {
	dir := t.TempDir()
	m, err := Open(Options{StateDir: dir, CacheTTL: -1, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 1 << 10}
	addN(t, m.History(), testRoom, 0, 3, lim)
	taken, err := m.History().Take(testRoom, m.History().Seq(), lim)
	if err != nil {
		t.Fatal(err)
	}
	addN(t, m.History(), testRoom, 3, 1, lim) // arrives while the turn runs
	key, _ := routing.Parse(testRoom)
	st, _ := m.Store("main")
	e, _, err := st.Begin(context.Background(), key, sessions.Origin{At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := st.Transcript(e.SessionID)
	um := sessions.UserText("context…\n\n[Bo] what about the above?", time.Now())
	um.RecordIDs, um.HistorySeq = []string{"rec-1"}, taken[len(taken)-1].Seq
	if _, err := tr.Append(context.Background(), um); err != nil {
		t.Fatal(err)
	}
	// Crash: no cut. The next start reads the transcript...
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = Open(Options{StateDir: dir, CacheTTL: -1, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st, _ = m.Store("main")
	tr, _ = st.Transcript(e.SessionID)
	rs, err := tr.Records(context.Background(), []string{"rec-1"})
	if err != nil {
		t.Fatal(err)
	}
	if rs.HistorySeq != um.HistorySeq || !rs.Consumed["rec-1"] {
		t.Fatalf("records state %+v, want history seq %d", rs, um.HistorySeq)
	}
	// ...and cuts there: only the message that came later is left.
	if err := m.History().Cut(testRoom, rs.HistorySeq); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(texts(t, m.History(), testRoom, m.History().Seq(), lim), " "); got != "m3" {
		t.Errorf("after recovery cut: %q, want m3", got)
	}
}

// TestRoomHistoryClearBefore: an automatic reset drops what was said
// before the old session expired, by message time, and keeps the rest.
func TestRoomHistoryClearBefore(t *testing.T) {
	h := openTestHistory(t, t.TempDir())
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 1 << 10}
	addN(t, h, testRoom, 0, 5, lim) // at 1000..1004 s
	if err := h.ClearBefore(testRoom, time.Unix(1003, 0)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(texts(t, h, testRoom, h.Seq(), lim), " "); got != "m3 m4" {
		t.Errorf("after ClearBefore: %q, want m3 m4", got)
	}
	_ = h.Close()
	h = openTestHistory(t, filepath.Dir(h.path))
	if got := strings.Join(texts(t, h, testRoom, h.Seq(), lim), " "); got != "m3 m4" {
		t.Errorf("after reopen: %q, want m3 m4", got)
	}
}

func TestExpiry(t *testing.T) {
	idle := 60
	cfg := sessions.ResetConfig{Reset: sessions.ResetPolicy{Mode: sessions.ResetIdle, IdleMinutes: &idle}}
	key, _ := routing.Parse(testRoom)
	last := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	e := sessions.Entry{SessionStartedAt: last, LastInteractionAt: last}
	if at, reason := sessions.Expiry(cfg, key, e, last.Add(30*time.Minute)); !at.IsZero() || reason != "" {
		t.Errorf("fresh session: expiry %v %q", at, reason)
	}
	if at, reason := sessions.Expiry(cfg, key, e, last.Add(3*time.Hour)); !at.Equal(last.Add(time.Hour)) || reason != sessions.ReasonIdle {
		t.Errorf("idle session: expiry %v %q, want %v idle", at, reason, last.Add(time.Hour))
	}
}

// TestRoomHistoryFailedWrite: a write the disk refuses half way is cut back
// to the last whole line, the caller gets a storage error (the adapter does
// not acknowledge the message), and the log takes appends again after.
func TestRoomHistoryFailedWrite(t *testing.T) {
	dir := t.TempDir()
	h := openTestHistory(t, dir)
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 1 << 10}
	addN(t, h, testRoom, 0, 2, lim)
	h.write = func(f *os.File, b []byte) (int, error) {
		n, _ := f.Write(b[:len(b)/2])
		return n, syscall.ENOSPC
	}
	_, err := h.Append(context.Background(), testRoom, sessions.HistoryEntry{MessageID: "x", Text: "lost"}, lim)
	if !errors.Is(err, sessions.ErrStorage) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v, want ErrStorage wrapping ENOSPC", err)
	}
	h.write = (*os.File).Write
	addN(t, h, testRoom, 2, 1, lim)
	if got := strings.Join(texts(t, h, testRoom, h.Seq(), lim), " "); got != "m0 m1 m2" {
		t.Errorf("after the failed write: %q", got)
	}
	_ = h.Close()
	b, _ := os.ReadFile(filepath.Join(dir, historyFile))
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !strings.HasPrefix(l, "{") || !strings.HasSuffix(l, "}") {
			t.Errorf("line %d is not whole: %q", i+1, l)
		}
	}
	h = openTestHistory(t, dir)
	if got := strings.Join(texts(t, h, testRoom, h.Seq(), lim), " "); got != "m0 m1 m2" {
		t.Errorf("after reopen: %q", got)
	}
}

// TestRoomHistoryOneHolder: a second opener is refused, naming the holder;
// once the first closes, the log opens again.
func TestRoomHistoryOneHolder(t *testing.T) {
	dir := t.TempDir()
	h := openTestHistory(t, dir)
	second := OpenRoomHistory(dir, zaptest.NewLogger(t))
	if second.openErr == nil || !strings.Contains(second.openErr.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second open: %v, want refused naming this pid", second.openErr)
	}
	if _, err := second.Append(context.Background(), testRoom, sessions.HistoryEntry{Text: "x"}, sessions.HistoryLimits{Count: 1}); err == nil {
		t.Error("append through a refused open succeeded")
	}
	_ = h.Close()
	openTestHistory(t, dir)
}

// TestRoomHistoryAppendDoesNotWaitForAnotherFsync: an append whose line
// is durable returns while another append's fsync is in flight (syncMu
// held here) when nothing is to be compacted; it used to wait for that
// fsync only to learn it.
func TestRoomHistoryAppendDoesNotWaitForAnotherFsync(t *testing.T) {
	h := openTestHistory(t, t.TempDir())
	addN(t, h, testRoom, 0, 3, sessions.HistoryLimits{Count: 10, MaxBytes: 1 << 10})
	h.syncMu.Lock() // another append's fsync in flight
	done := make(chan struct{})
	go func() { // owned by this test; ends when maybeCompact returns
		defer close(done)
		h.maybeCompact()
	}()
	select {
	case <-done:
		h.syncMu.Unlock()
	case <-time.After(10 * time.Second):
		h.syncMu.Unlock()
		<-done
		t.Fatal("maybeCompact waited for an fsync in flight with nothing to compact")
	}
}

// TestRoomHistoryFailedFsyncFailsEveryWriteItCovered: two lines written
// before one fsync that fails are both reported lost. On main the second
// wait ran a new fsync, which succeeds (the kernel reports a lost
// write-back once), and said its line was durable.
func TestRoomHistoryFailedFsyncFailsEveryWriteItCovered(t *testing.T) {
	h := openTestHistory(t, t.TempDir())
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 1 << 10}
	ctx := context.Background()
	_, waitA, err := h.Add(ctx, testRoom, sessions.HistoryEntry{MessageID: "a", Text: "a"}, lim)
	if err != nil {
		t.Fatal(err)
	}
	_, waitB, err := h.Add(ctx, testRoom, sessions.HistoryEntry{MessageID: "b", Text: "b"}, lim)
	if err != nil {
		t.Fatal(err)
	}
	failed := false
	h.fsync = func(f *os.File) error {
		if !failed {
			failed = true
			return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
		}
		return f.Sync()
	}
	if err := waitA(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("first wait: %v, want EIO", err)
	}
	if err := waitB(); !errors.Is(err, syscall.EIO) || !errors.Is(err, sessions.ErrStorage) {
		t.Errorf("the other line the failed fsync covered: %v, want ErrStorage wrapping EIO", err)
	}
	// A line written after the failure is fsynced anew.
	if _, err := h.Append(ctx, testRoom, sessions.HistoryEntry{MessageID: "c", Text: "c"}, lim); err != nil {
		t.Errorf("append after the failed fsync: %v", err)
	}
}
