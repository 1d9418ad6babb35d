package telegramtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Defaults of a Server's bot.
const (
	DefaultToken       = "123456:TEST-token"
	DefaultBotID       = 4242
	DefaultBotUserName = "gateway_test_bot"
)

// Options configure a Server; zero fields take the defaults.
type Options struct {
	Token       string
	BotID       int64
	BotUserName string
	// OnSent, if set, is called with each message sent or edited once it is
	// recorded (outside the server's lock, on the request's goroutine):
	// a load generator sees replies as they arrive without copying Sent.
	OnSent func(m Sent, at time.Time)
}

// Sent is one message the bot sent or edited.
type Sent struct {
	Method    string // sendMessage or editMessageText
	MessageID int
	ChatID    int64
	ThreadID  int // message_thread_id, 0 if absent
	Text      string
	ParseMode string // "HTML", or "" for plain text
	ReplyTo   int    // reply_to_message_id, 0 if absent
	// Via is the tag of the API root the client used (Server.Via), "" for
	// the plain one.
	Via string
	// Upload is the uploaded file of a sendPhoto, sendDocument, … or of one
	// message of a sendMediaGroup (media.go); Text is then its caption.
	Upload *Upload `json:",omitempty"`
	// MediaGroupID is set on the messages of one album.
	MediaGroupID string `json:",omitempty"`
}

// Action is one sendChatAction call.
type Action struct {
	ChatID   int64
	ThreadID int
	Action   string
}

// Failure is an error answer injected with FailNext.
type Failure struct {
	Code        int    // error_code, e.g. 400, 409, 429
	Description string // default from Code
	RetryAfter  int    // parameters.retry_after (seconds)
	MigrateTo   int64  // parameters.migrate_to_chat_id
}

// Webhook is the registered webhook.
type Webhook struct {
	URL         string
	SecretToken string
}

// Server is a fake Bot API. Create it with NewServer or Start.
type Server struct {
	// URL is the API root to configure (apiRoot), e.g. http://127.0.0.1:port.
	URL  string
	opts Options
	srv  *httptest.Server
	done chan struct{}

	mu sync.Mutex // guards everything below
	// updates holds unconfirmed updates in id order; nextUpdate is the next id.
	updates    []pending
	nextUpdate int
	confirmed  int // highest offset a getUpdates asked for
	pollGen    int // incremented by each getUpdates; older polls end with 409
	nextMsg    int
	sent       []Sent
	sentAt     []time.Time // when each of sent was recorded
	deleted    []Deleted
	actions    []Action
	reactions  []Reaction
	calls      map[string]int
	callAt     map[string][]time.Time // when each call arrived, failed ones included
	failures   map[string][]Failure
	webhook    *Webhook
	migrated   map[int64]int64
	changed    chan struct{}        // closed and replaced on every change
	conns      int                  // client connections not yet closed
	commands   []MyCommands         // setMyCommands calls, in order
	errAnswers []ErrorAnswer        // calls answered with an error (answers.go)
	members    map[memberKey]string // getChatMember statuses (members.go)
	lookups    []MemberLookup       // getChatMember calls
	// Inline keyboards and presses (callback.go).
	keyboards   map[msgKey][][]Button
	markupEdits []MarkupEdit
	queries     map[string]bool // callback queries not answered yet
	nextQuery   int
	answers     []CallbackAnswer

	files fileStore // getFile and downloads (files.go)

	// stopped is set between Stop and Restart; served is closed when the
	// Serve loop Restart started returns (outage.go).
	stopped bool
	served  chan struct{}
}

type pending struct {
	id  int
	raw json.RawMessage
}

// NewServer starts a fake server; call Close when done.
func NewServer(opts Options) *Server {
	if opts.Token == "" {
		opts.Token = DefaultToken
	}
	if opts.BotID == 0 {
		opts.BotID = DefaultBotID
	}
	if opts.BotUserName == "" {
		opts.BotUserName = DefaultBotUserName
	}
	s := &Server{opts: opts, done: make(chan struct{}), nextUpdate: 1, nextMsg: 1000,
		calls: map[string]int{}, failures: map[string][]Failure{}, migrated: map[int64]int64{},
		changed: make(chan struct{})}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ConnState = s.connState
	s.srv.Start()
	s.URL = s.srv.URL
	return s
}

// Start is NewServer with Close registered as t's cleanup.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := NewServer(opts)
	t.Cleanup(s.Close)
	return s
}

// Close ends pending long polls and stops the server. It is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
	}
	close(s.done)
	served := s.served
	s.mu.Unlock()
	s.srv.Close()
	if served != nil {
		<-served
	}
}

// Token is the bot token the server accepts.
func (s *Server) Token() string { return s.opts.Token }

// BotID is the bot's user id.
func (s *Server) BotID() int64 { return s.opts.BotID }

// BotUserName is the bot's username without "@".
func (s *Server) BotUserName() string { return s.opts.BotUserName }

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// wait blocks until cond (called with s.mu held) is true or ctx ends.
func (s *Server) wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return http.ErrServerClosed
		case <-ch:
		}
	}
}

// FailNext makes the next calls of method fail with f, in order (one
// failure per call).
func (s *Server) FailNext(method string, f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], f...)
}

// Migrate makes group oldID a supergroup newID: sends to oldID fail with
// migrate_to_chat_id, and the migration service messages are queued.
func (s *Server) Migrate(oldID, newID int64) {
	s.mu.Lock()
	s.migrated[oldID] = newID
	s.mu.Unlock()
	s.AddUpdate(map[string]any{"message": map[string]any{
		"message_id": s.msgID(), "date": time.Now().Unix(),
		"chat":               map[string]any{"id": oldID, "type": "group", "title": "group"},
		"from":               map[string]any{"id": 1, "is_bot": false, "first_name": "Admin"},
		"migrate_to_chat_id": newID,
	}})
	s.AddUpdate(map[string]any{"message": map[string]any{
		"message_id": s.msgID(), "date": time.Now().Unix(),
		"chat":                 map[string]any{"id": newID, "type": "supergroup", "title": "group"},
		"from":                 map[string]any{"id": 1, "is_bot": false, "first_name": "Admin"},
		"migrate_from_chat_id": oldID,
	}})
}

func (s *Server) msgID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextMsg++
	return s.nextMsg
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	r = stripVia(r)
	if strings.HasPrefix(r.URL.Path, "/file/") {
		s.serveFile(w, r)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/")
	tokenPart, method, ok := strings.Cut(path, "/")
	sw := &statusWriter{ResponseWriter: w}
	defer s.recordAnswer(method, sw)
	w = sw
	if !ok || tokenPart != "bot"+s.opts.Token {
		writeErr(w, Failure{Code: 401})
		return
	}
	if err := parseForm(r); err != nil {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: " + err.Error()})
		return
	}
	s.mu.Lock()
	s.calls[method]++
	s.recordCallLocked(method)
	var fail *Failure
	if q := s.failures[method]; len(q) > 0 {
		fail = &q[0]
		s.failures[method] = q[1:]
	}
	if fail == nil {
		// A call's effect on the webhook state is visible when its count
		// is: a test that waited for the call reads the state it set.
		s.applyWebhookLocked(method, r.Form)
	}
	s.notifyLocked()
	s.mu.Unlock()
	if fail != nil {
		writeErr(w, *fail)
		return
	}
	switch method {
	case "getMe":
		writeOK(w, s.botUser())
	case "getUpdates":
		s.getUpdates(w, r)
	case "sendMessage":
		s.sendMessage(w, r)
	case "editMessageText":
		s.editMessageText(w, r)
	case "sendChatAction":
		s.sendChatAction(w, r)
	case "setWebhook", "deleteWebhook":
		writeOK(w, true) // applied with the call's count

	case "setMyCommands", "getMyCommands", "deleteMyCommands":
		s.myCommands(w, r, method)
	case "getFile":
		s.getFileMethod(w, r)
	case "setMessageReaction":
		s.setMessageReaction(w, r)
	case "deleteMessage":
		s.deleteMessage(w, r)
	case "getChatMember":
		s.getChatMember(w, r)
	case "editMessageReplyMarkup":
		s.editMessageReplyMarkup(w, r)
	case "answerCallbackQuery":
		s.answerCallbackQuery(w, r)
	case "sendPhoto", "sendVideo", "sendVoice", "sendAudio", "sendDocument":
		s.sendFile(w, r, method)
	case "sendMediaGroup":
		s.sendMediaGroup(w, r)
	default:
		writeErr(w, Failure{Code: 404, Description: "Not Found: method not found"})
	}
}

func (s *Server) botUser() map[string]any {
	return map[string]any{"id": s.opts.BotID, "is_bot": true, "first_name": "Test Bot",
		"username": s.opts.BotUserName, "can_join_groups": true}
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request) {
	offset, _ := strconv.Atoi(r.Form.Get("offset"))
	timeout, _ := strconv.Atoi(r.Form.Get("timeout"))
	limit, _ := strconv.Atoi(r.Form.Get("limit"))
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	s.mu.Lock()
	if s.webhook != nil {
		s.mu.Unlock()
		writeErr(w, Failure{Code: 409, Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"})
		return
	}
	if offset > s.nextUpdate+10 {
		// An offset past the queue's end is not one Telegram handed out
		// (another bot's, another Bot API server's, or ids chosen afresh
		// after a week without updates): the Bot API server answers from
		// the head of its queue and confirms nothing (tdlib TQueue::get:
		// "Specified from_id is in the future").
		offset = 0
	}
	if offset > 0 {
		// Updates below offset are confirmed and forgotten.
		i := 0
		for i < len(s.updates) && s.updates[i].id < offset {
			i++
		}
		s.updates = s.updates[i:]
		s.confirmed = max(s.confirmed, offset)
	}
	s.pollGen++
	gen := s.pollGen
	s.notifyLocked()
	s.mu.Unlock()

	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if s.pollGen != gen {
			s.mu.Unlock()
			writeErr(w, Failure{Code: 409, Description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"})
			return
		}
		var batch []json.RawMessage
		for _, u := range s.updates {
			if u.id >= offset && len(batch) < limit {
				batch = append(batch, u.raw)
			}
		}
		ch := s.changed
		s.mu.Unlock()
		if len(batch) > 0 || timeout <= 0 {
			if batch == nil {
				batch = []json.RawMessage{}
			}
			writeOK(w, batch)
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			writeOK(w, []json.RawMessage{})
			return
		case <-r.Context().Done():
			return
		case <-s.done:
			writeOK(w, []json.RawMessage{})
			return
		}
	}
}

func writeOK(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func writeErr(w http.ResponseWriter, f Failure) {
	if f.Description == "" {
		f.Description = map[int]string{
			400: "Bad Request", 401: "Unauthorized", 403: "Forbidden: bot was blocked by the user",
			404: "Not Found", 409: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
			429: "Too Many Requests: retry after " + strconv.Itoa(f.RetryAfter),
		}[f.Code]
	}
	body := map[string]any{"ok": false, "error_code": f.Code, "description": f.Description}
	params := map[string]any{}
	if f.RetryAfter > 0 {
		params["retry_after"] = f.RetryAfter
	}
	if f.MigrateTo != 0 {
		params["migrate_to_chat_id"] = f.MigrateTo
	}
	if len(params) > 0 {
		body["parameters"] = params
	}
	w.Header().Set("Content-Type", "application/json")
	// Telegram answers errors with the same HTTP status as error_code.
	w.WriteHeader(f.Code)
	_ = json.NewEncoder(w).Encode(body)
}
