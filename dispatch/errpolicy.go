package dispatch

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
)

// maxStreaks bounds the rooms whose failure streak is remembered; past it
// one is forgotten (its next failure is announced again).
const maxStreaks = 4096

// streaks remembers, per session key, that a failure notice was posted
// and no turn has succeeded since (errorPolicy: once). In memory only: a
// restart starts every room afresh.
type streaks struct {
	mu      sync.Mutex
	failing map[routing.Key]struct{} // guarded by mu
}

// first records a failure of key and reports whether it starts a streak.
func (s *streaks) first(key routing.Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.failing[key]; ok {
		return false
	}
	if s.failing == nil {
		s.failing = map[routing.Key]struct{}{}
	}
	if len(s.failing) >= maxStreaks {
		for k := range s.failing {
			delete(s.failing, k)
			break
		}
	}
	s.failing[key] = struct{}{}
	return true
}

// end records a success of key: its streak, if any, is over.
func (s *streaks) end(key routing.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.failing, key)
}

// withholdNotice applies the room's errorPolicy to the failure notice text
// of a failed turn over ws (records ids; last is the message it answers).
// It reports whether the notice is withheld (silent, or once within a
// streak); the records are then finished without a reply, and web
// requests among ws are told so they stop waiting.
func (f *failures) withholdNotice(ctx context.Context, last *work, ws []*work, ids []string, text string) bool {
	d := f.d
	if last.Agent != nil {
		return false
	}
	key := last.Key
	switch d.rt.Load().RoomFor(last.In).ErrorPolicy {
	case channels.ErrorsSilent:
	case channels.ErrorsOnce:
		if f.streaks.first(key) {
			return false
		}
	default:
		return false
	}
	d.log.Info("failure notice withheld by the room's errorPolicy", zap.Stringer("session_key", key),
		zap.Strings("record_ids", ids))
	d.finish(ids...)
	f.release(ctx, ws, text)
	return true
}

// withholdGiveUp applies errorPolicy to a given-up message's notice: SPEC
// §3.7 has it announced, so only silent withholds it (logged at warn); under
// once it is posted and counts as the streak's notice.
func (f *failures) withholdGiveUp(ctx context.Context, w *work, text string) bool {
	d := f.d
	switch d.rt.Load().RoomFor(w.In).ErrorPolicy {
	case channels.ErrorsSilent:
		d.log.Warn("given-up notice withheld by the room's errorPolicy (silent)", zap.Stringer("session_key", w.Key),
			zap.String("record_id", w.RecordID), zap.String("chat_id", w.In.ChatID))
		d.finish(w.RecordID)
		f.release(ctx, []*work{w}, text)
		return true
	case channels.ErrorsOnce:
		f.streaks.first(w.Key)
	}
	return false
}
