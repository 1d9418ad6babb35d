package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/internal/httpclient"
)

// floorRoleEnv, set to floorRole in a child's environment, makes the bench
// binary (or its test binary, TestMain) run the floor bot instead of a
// bench: the re-executed child that -floor measures in place of the daemon.
const (
	floorRoleEnv = "GATEWAY_BENCH_ROLE"
	floorRole    = "floor"
)

// isFloorChild reports whether this process is a floor bot child.
func isFloorChild() bool { return os.Getenv(floorRoleEnv) == floorRole }

// floorConfig is what the floor bot is started with (its command line).
type floorConfig struct {
	apiRoot, token, modelURL, listen string
	maxConcurrent                    int
	// context is the template file of the context floor (floorcontext.go);
	// "" runs the plain floor.
	context string
}

// floorMain parses the child's command line and runs the floor bot until
// SIGTERM; it returns the process's exit code.
func floorMain(ctx context.Context, args []string) int {
	var c floorConfig
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	fs.StringVar(&c.apiRoot, "api-root", "", "Bot API root (the fake's URL)")
	fs.StringVar(&c.token, "token", "", "bot token")
	fs.StringVar(&c.modelURL, "model-url", "", "OpenAI-compatible base URL (the fake model's)")
	fs.StringVar(&c.listen, "listen", "", "address of the /readyz listener")
	fs.IntVar(&c.maxConcurrent, "max-concurrent", 8, "turns at once")
	fs.StringVar(&c.context, "context", "", "template of the context floor (what the gateway asks the model)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := runFloorBot(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "floor bot:", err)
		return 1
	}
	return 0
}

// floorBot is "a bot that keeps nothing": it long-polls the Bot API, runs
// at most maxConcurrent turns at once, one per chat at a time in arrival
// order (each queued message its own turn, as queue mode followup), sends
// the model only the message it answers and replies to it. No disk, no
// journal, no history: the floor the daemon's throughput and CPU are
// compared with, on the same fakes and client libraries.
type floorBot struct {
	bot   *tgbotapi.BotAPI
	model *goopenai.Client
	slots chan struct{} // one token per turn running
	wg    sync.WaitGroup
	// tmpl, for the context floor, is what the gateway asks the model
	// around a chat's history, kept in history; nil for the plain floor.
	tmpl    *floorTemplate
	history chatHistory

	mu     sync.Mutex
	queues map[int64][]*tgbotapi.Message // guarded by mu; a chat present has a drain running
}

func runFloorBot(ctx context.Context, c floorConfig) error {
	if c.maxConcurrent < 1 {
		return fmt.Errorf("max-concurrent %d: want at least 1", c.maxConcurrent)
	}
	// Clients like the daemon's: the libraries, on a transport that keeps
	// enough idle connections for the turns running at once.
	bot, err := tgbotapi.NewBotAPIWithClient(c.token, c.apiRoot+"/bot%s/%s", httpclient.New())
	if err != nil {
		return fmt.Errorf("telegram: getMe: %w", err)
	}
	mcfg := goopenai.DefaultConfig("bench")
	mcfg.BaseURL = c.modelURL
	mcfg.HTTPClient = httpclient.New()
	f := &floorBot{bot: bot, model: goopenai.NewClientWithConfig(mcfg),
		slots: make(chan struct{}, c.maxConcurrent), queues: map[int64][]*tgbotapi.Message{}}
	if c.context != "" {
		if f.tmpl, err = loadTemplate(c.context); err != nil {
			return err
		}
	}

	stopReady, err := serveReady(c.listen)
	if err != nil {
		return err
	}
	defer stopReady()
	// The library's poller has no context: StopReceivingUpdates ends it
	// after its current long poll; the process exits without waiting.
	updates := bot.GetUpdatesChan(tgbotapi.UpdateConfig{Timeout: 30, Limit: 100})
	defer bot.StopReceivingUpdates()
	defer f.wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return nil
		case u := <-updates:
			if u.Message != nil && u.Message.Text != "" {
				f.accept(ctx, u.Message)
			}
		}
	}
}

// accept queues m behind its chat's earlier messages, starting the chat's
// drain when none runs.
func (f *floorBot) accept(ctx context.Context, m *tgbotapi.Message) {
	chat := m.Chat.ID
	f.mu.Lock()
	q, running := f.queues[chat]
	f.queues[chat] = append(q, m)
	f.mu.Unlock()
	if !running {
		f.wg.Add(1)
		// Owned by run, which waits for it (f.wg) before returning; ctx
		// (run's) stops it between turns.
		go f.drain(ctx, chat)
	}
}

// drain runs the chat's queued messages one turn each, in order, until
// its queue is empty.
func (f *floorBot) drain(ctx context.Context, chat int64) {
	defer f.wg.Done()
	for {
		f.mu.Lock()
		q := f.queues[chat]
		if len(q) == 0 {
			delete(f.queues, chat)
			f.mu.Unlock()
			return
		}
		m := q[0]
		q[0] = nil
		f.queues[chat] = q[1:]
		f.mu.Unlock()
		select {
		case f.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if err := f.turn(ctx, m); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "floor bot: chat %d message %d: %v\n", chat, m.MessageID, err)
		}
		<-f.slots
	}
}

// turn asks the model about m (streamed, as the daemon asks) and sends
// the answer as a reply to m: m alone, or for the context floor what the
// gateway would ask, the chat's history kept in memory.
func (f *floorBot) turn(ctx context.Context, m *tgbotapi.Message) error {
	req := goopenai.ChatCompletionRequest{
		Model:         "bench",
		Messages:      []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: m.Text}},
		Stream:        true,
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}
	if f.tmpl != nil {
		req = f.history.request(f.tmpl, m.Chat.ID, m.Text)
	}
	stream, err := f.model.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	defer stream.Close()
	var answer strings.Builder
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("model stream: %w", err)
		}
		for _, c := range chunk.Choices {
			answer.WriteString(c.Delta.Content)
		}
	}
	if f.tmpl != nil {
		f.history.add(f.tmpl, m.Chat.ID, m.Text, answer.String())
	}
	reply := tgbotapi.NewMessage(m.Chat.ID, answer.String())
	reply.ReplyToMessageID = m.MessageID
	if _, err := f.bot.Send(reply); err != nil {
		return fmt.Errorf("telegram: sendMessage: %w", err)
	}
	return nil
}

// serveReady answers /readyz with 200 on addr (the bench waits for it as
// for the daemon's) until stop is called.
func serveReady(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("readyz listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	// Owned by the returned stop, which closes the server (ending Serve)
	// and waits for done.
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}
