package agents

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/gateway/gateway/sessions"
)

// Media out (issue 23): the message tool's send_media action attaches
// files to the turn's reply. A file is named either by a path inside the
// agent's workspace (Agent.Workspace; opened through os.Root, so neither
// "..", an absolute path nor a symlink leads out of it) or by a media id a
// tool result of the same turn announced ("media:<16 hex>", e.g. an MCP
// tool's image). Its bytes are copied into the outbound media store
// (Options.Media) at once, so what the reply sends is what the model saw
// when it asked, and its type (sniffed from the bytes, not trusted from
// the name) and size are checked against MediaOut. The files go out with
// the reply, through the outbox (Result.Media).

// Defaults of agents.defaults.media.
const (
	DefaultMediaOutMaxMB = 20
	// maxMediaPerSend bounds the files of one send_media call (a platform
	// album holds 10: the adapters send more as several).
	maxMediaPerSend = 20
	// maxMediaPerTurn bounds the files one turn attaches.
	maxMediaPerTurn = 30
	// maxCaption bounds a caption (characters); the platform's own limit
	// is applied when sending (the rest follows as text).
	maxCaption = 4000
)

// DefaultMediaOutTypes are the MIME types the agent may send unless
// agents.defaults.media.allowedTypes says otherwise: pictures, sound,
// MP4 video and documents that no browser or client runs.
var DefaultMediaOutTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp", "audio/*", "video/mp4",
	"application/pdf", "text/plain", "text/csv", "application/json", "application/zip"}

// MediaOut is agents.defaults.media: what the agents may send.
type MediaOut struct {
	// MaxMB caps one file (default 20).
	MaxMB int `mapstructure:"maxMb"`
	// AllowedTypes are MIME types ("image/png") or families ("audio/*").
	AllowedTypes []string `mapstructure:"allowedTypes"`
}

func (m MediaOut) withDefaults() MediaOut {
	if m.MaxMB == 0 {
		m.MaxMB = DefaultMediaOutMaxMB
	}
	if len(m.AllowedTypes) == 0 {
		m.AllowedTypes = DefaultMediaOutTypes
	}
	return m
}

// Validate checks m (after defaults).
func (m MediaOut) Validate() error {
	if m.MaxMB < 1 || m.MaxMB > 2000 {
		return fmt.Errorf("media.maxMb %d: want 1..2000", m.MaxMB)
	}
	for _, t := range m.AllowedTypes {
		mt, _, err := mime.ParseMediaType(t)
		if err != nil || mt != strings.ToLower(t) || strings.HasPrefix(mt, "*") {
			return fmt.Errorf("media.allowedTypes: %q is not a MIME type such as image/png or audio/*", t)
		}
	}
	return nil
}

func (m MediaOut) allows(mimeType string) bool {
	for _, t := range m.AllowedTypes {
		if t == mimeType {
			return true
		}
		if fam, ok := strings.CutSuffix(t, "/*"); ok && strings.HasPrefix(mimeType, fam+"/") {
			return true
		}
	}
	return false
}

// MediaFile is one file of a reply, in the outbound media store.
type MediaFile struct {
	Kind     string `json:"kind"` // image, voice, audio, video or document
	MimeType string `json:"mimeType"`
	FileName string `json:"fileName"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
}

// MediaSend is the files of one send_media call and their caption.
type MediaSend struct {
	Files   []MediaFile
	Caption string
}

// turnMedia is what a turn attaches to its reply and the media ids its
// tool results announced. Tools may run concurrently: mu guards both.
type turnMedia struct {
	mu    sync.Mutex
	sends []MediaSend          // guarded by mu
	known map[string]MediaFile // guarded by mu: "media:<16 hex>" -> file
}

func (t *turnMedia) add(ms MediaSend) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(ms.Files)
	for _, s := range t.sends {
		n += len(s.Files)
	}
	if n > maxMediaPerTurn {
		return toolErrorf("message: send_media: at most %d files per reply", maxMediaPerTurn)
	}
	t.sends = append(t.sends, ms)
	return nil
}

// result is the files attached so far (nil for a nil t).
func (t *turnMedia) result() []MediaSend {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]MediaSend(nil), t.sends...)
}

func (t *turnMedia) note(f MediaFile) string {
	id := "media:" + f.SHA256[:16]
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.known == nil {
		t.known = map[string]MediaFile{}
	}
	t.known[id] = f
	return id
}

func (t *turnMedia) lookup(id string) (MediaFile, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.known[id]
	return f, ok
}

// errNoMediaStore is reported when the runner has no media store.
var errNoMediaStore = errors.New("sending files is not enabled on this gateway")

// storeMedia copies r (at most max bytes) into the media store and
// describes it; name is the file name shown in the chat.
func (r *Runner) storeMedia(rd io.Reader, name string) (MediaFile, error) {
	st, cfg := r.opts.Media, r.defaults.Media.withDefaults()
	if st == nil {
		return MediaFile{}, errNoMediaStore
	}
	max := int64(cfg.MaxMB) << 20
	var head [512]byte
	n, err := io.ReadFull(rd, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return MediaFile{}, fmt.Errorf("read: %w", err)
	}
	mt := sniffType(head[:n], name)
	if !cfg.allows(mt) {
		return MediaFile{}, toolErrorf("message: send_media: %s is %s, which this gateway does not send (allowed: %s)",
			name, mt, strings.Join(cfg.AllowedTypes, ", "))
	}
	lim := &capReader{r: io.MultiReader(bytes.NewReader(head[:n]), rd), left: max}
	sum, size, err := st.Put(lim)
	if lim.over {
		return MediaFile{}, toolErrorf("message: send_media: %s is larger than the %d MB this gateway sends", name, cfg.MaxMB)
	}
	if err != nil {
		return MediaFile{}, err
	}
	if size == 0 {
		return MediaFile{}, toolErrorf("message: send_media: %s is empty", name)
	}
	return MediaFile{Kind: kindOf(mt), MimeType: mt, FileName: name, Size: size, SHA256: sum}, nil
}

// capReader fails once more than left bytes were read.
type capReader struct {
	r    io.Reader
	left int64
	over bool
}

var errOverCap = errors.New("over the size cap")

func (c *capReader) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		c.over = true
		return n, errOverCap
	}
	return n, err
}

// sniffType is the file's MIME type from its first bytes; the name's
// extension only refines an answer the bytes leave generic (plain text,
// unknown binary), never overrides one they give.
func sniffType(head []byte, name string) string {
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(head))
	byExt, _, _ := mime.ParseMediaType(mime.TypeByExtension(strings.ToLower(path.Ext(name))))
	switch {
	case mt == "application/ogg":
		return "audio/ogg"
	case mt == "text/plain" && (byExt == "text/csv" || byExt == "application/json" || byExt == "text/markdown"):
		return byExt
	case mt == "application/octet-stream" && byExt != "" && !strings.HasPrefix(byExt, "text/") && byExt != "image/svg+xml":
		// Formats the sniffer does not know (m4a, some mp3s): the
		// extension is believed only for types that are not rendered.
		return byExt
	}
	return mt
}

// kindOf is how a MIME type is sent: Ogg audio as a voice note, other
// sound as audio, pictures Telegram shows as photos as images, MP4 as
// video, the rest as documents.
func kindOf(mt string) string {
	switch {
	case mt == "audio/ogg":
		return "voice"
	case strings.HasPrefix(mt, "audio/"):
		return "audio"
	case mt == "image/jpeg" || mt == "image/png" || mt == "image/webp":
		return "image"
	case mt == "video/mp4":
		return "video"
	}
	return "document"
}

// openWorkspace opens name inside the agent's workspace. Absolute paths,
// "..", and symlinks that lead out are refused (os.Root); so are
// directories and other non-regular files (a named pipe without blocking).
func openWorkspace(workspace, name string) (*os.File, error) {
	if workspace == "" {
		return nil, toolErrorf("message: send_media: this agent has no workspace; only media ids from tool results can be sent")
	}
	clean := filepath.ToSlash(strings.TrimSpace(name))
	clean = strings.TrimPrefix(clean, "./")
	if clean == "" || path.IsAbs(clean) || filepath.IsAbs(name) {
		return nil, toolErrorf("message: send_media: %q: give a path relative to the workspace", name)
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	// O_NONBLOCK: a named pipe opens at once (and is refused below as not
	// a regular file) instead of blocking until a writer comes; reads of a
	// regular file are not affected.
	f, err := root.OpenFile(filepath.FromSlash(clean), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, toolErrorf("message: send_media: %q: no such file in the workspace", name)
		}
		// Escapes (.., symlinks out) and permission errors alike: the
		// model learns only that the path is refused.
		return nil, toolErrorf("message: send_media: %q: not a file the agent may send (outside the workspace or unreadable)", name)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, toolErrorf("message: send_media: %q: not a regular file", name)
	}
	return f, nil
}

// noteImageBlocks stores the image blocks of a tool result in the media
// store and adds, after each, a text block naming its media id, so the
// model can send what a tool showed it. Blocks that cannot be stored are
// left as they were.
func (r *Runner) noteImageBlocks(s *session, content []sessions.Content) []sessions.Content {
	if r.opts.Media == nil || s.media == nil {
		return content
	}
	out := make([]sessions.Content, 0, len(content)+1)
	for _, c := range content {
		out = append(out, c)
		if c.Type != sessions.BlockImage || c.Data == "" {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(c.Data)
		if err != nil {
			continue
		}
		ext, _ := mime.ExtensionsByType(c.MimeType)
		name := "image"
		if len(ext) > 0 {
			name += ext[0]
		}
		f, err := r.storeMedia(bytes.NewReader(data), name)
		if err != nil {
			continue // a type or size the gateway does not send
		}
		id := s.media.note(f)
		out = append(out, sessions.Content{Type: "text", Text: fmt.Sprintf(
			"[the image above is %s (%s, %d bytes): the message tool's send_media sends it to the chat]", id, f.MimeType, f.Size)})
	}
	return out
}

// mediaFromTranscript is the files the send_media calls of the turn that
// ends msgs attached (their tool results name them), for a reply found
// already in the transcript (Turn.Reuse): a restart between the
// transcript's write and the outbox's sends them all the same.
func mediaFromTranscript(msgs []sessions.Message) []MediaSend {
	var sends []MediaSend
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != sessions.RoleUser; i-- {
		m := msgs[i]
		if m.Role != sessions.RoleToolResult || m.ToolName != MessageToolName || m.IsError {
			continue
		}
		var res sendMediaResult
		if json.Unmarshal([]byte(m.Text()), &res) != nil || res.Action != "send_media" || len(res.Files) == 0 {
			continue
		}
		sends = append([]MediaSend{{Files: res.Files, Caption: res.Caption}}, sends...)
	}
	return sends
}

// sendMediaResult is send_media's answer to the model; it also records the
// files in the transcript for mediaFromTranscript.
type sendMediaResult struct {
	OK      bool        `json:"ok"`
	Action  string      `json:"action"`
	Files   []MediaFile `json:"files"`
	Caption string      `json:"caption,omitempty"`
	Note    string      `json:"note"`
}

// sendMedia is the message tool's send_media: each file is resolved (a
// media id of this turn, else a workspace path), checked and copied into
// the media store, and the group is attached to the turn's reply.
func (r *Runner) sendMedia(s *session, args messageArgs) (any, error) {
	if s.media == nil {
		return nil, toolErrorf("message: this turn has no chat room (a subagent, or a message the API sent); nothing to act on")
	}
	if r.opts.Media == nil {
		return nil, toolErrorf("message: send_media: %v", errNoMediaStore)
	}
	ms := MediaSend{Caption: strings.TrimSpace(args.Caption)}
	for _, name := range args.Files {
		name = strings.TrimSpace(name)
		if f, ok := s.media.lookup(name); ok {
			ms.Files = append(ms.Files, f)
			continue
		}
		if strings.HasPrefix(name, "media:") {
			return nil, toolErrorf("message: send_media: %q is not a media id a tool result of this turn gave", name)
		}
		fh, err := openWorkspace(s.agent.Workspace, name)
		if err != nil {
			return nil, err
		}
		f, err := r.storeMedia(fh, path.Base(filepath.ToSlash(name)))
		fh.Close()
		if err != nil {
			var te *toolError
			if errors.As(err, &te) || errors.Is(err, errNoMediaStore) {
				return nil, err
			}
			return nil, fmt.Errorf("agents: send_media: %s: %w", name, err)
		}
		ms.Files = append(ms.Files, f)
	}
	if err := s.media.add(ms); err != nil {
		return nil, err
	}
	return sendMediaResult{OK: true, Action: "send_media", Files: ms.Files, Caption: ms.Caption,
		Note: "attached: the files go to the chat with your reply, after its text"}, nil
}
