package agents

import (
	"context"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// store is the part of sessions.AgentStore the runner uses; tests
// substitute an in-memory one.
type store interface {
	Get(key routing.Key) (sessions.Entry, bool, error)
	List() ([]sessions.Entry, error)
	Begin(ctx context.Context, key routing.Key, o sessions.Origin) (sessions.Entry, sessions.BeginInfo, error)
	Patch(ctx context.Context, key routing.Key, fn func(*sessions.Entry) error) (sessions.Entry, error)
	AddCounters(key routing.Key, c sessions.Counters)
	Delete(ctx context.Context, key routing.Key) error
	// transcript opens the transcript of the session e describes.
	transcript(e sessions.Entry) (transcript, error)
}

// transcript is the part of sessions.TranscriptLog the runner uses.
type transcript interface {
	Append(ctx context.Context, msgs ...sessions.Message) ([]string, error)
	AppendLazy(ctx context.Context, msgs ...sessions.Message) ([]string, error)
	AppendCompaction(ctx context.Context, c sessions.Compaction) (string, error)
	Context(ctx context.Context) (sessions.Context, error)
	History(ctx context.Context) ([]sessions.Message, error)
}

// contextAppender is a transcript that appends lazily and reads the
// context the append leaves in one step (pgstore: one round trip instead
// of two). The runner uses it, when the transcript has it, for what it
// appends right before a model call.
type contextAppender interface {
	AppendLazyContext(ctx context.Context, msgs ...sessions.Message) ([]string, sessions.Context, error)
}

// sessionStore is a store over the storage seam.
type sessionStore struct{ sessions.AgentStore }

func (s sessionStore) transcript(e sessions.Entry) (transcript, error) { return s.TranscriptOf(e) }

// backendStores opens each agent's store on b.
func backendStores(b sessions.Backend) func(string) (store, error) {
	return func(agentID string) (store, error) {
		st, err := b.Store(agentID)
		if err != nil {
			return nil, err
		}
		return sessionStore{st}, nil
	}
}
