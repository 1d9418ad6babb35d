package telegramtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Files the bot uploads (multipart/form-data, as the Bot API takes them):
// sendPhoto, sendVideo, sendVoice, sendAudio, sendDocument and
// sendMediaGroup, with Telegram's checks on captions (1024 characters
// after entity parsing), album sizes (2–10, one family) and file sizes
// (10 MB for photos, 50 MB otherwise).

// Upload is one uploaded file.
type Upload struct {
	Kind   string // photo, video, voice, audio or document
	Name   string // the part's file name
	Size   int
	SHA256 string
}

// maxMultipartMemory bounds what the fake keeps in memory per request.
const maxMultipartMemory = 64 << 20

// parseForm parses a form-encoded or multipart request's fields.
func parseForm(r *http.Request) error {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		return r.ParseMultipartForm(maxMultipartMemory)
	}
	return r.ParseForm()
}

// uploaded reads the multipart file in field, or why it cannot.
func uploaded(r *http.Request, field, kind string) (*Upload, *Failure) {
	if r.MultipartForm == nil || len(r.MultipartForm.File[field]) == 0 {
		return nil, &Failure{Code: 400, Description: "Bad Request: there is no " + kind + " in the request"}
	}
	fh := r.MultipartForm.File[field][0]
	f, err := fh.Open()
	if err != nil {
		return nil, &Failure{Code: 400, Description: "Bad Request: " + err.Error()}
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, &Failure{Code: 400, Description: "Bad Request: " + err.Error()}
	}
	switch {
	case n == 0:
		return nil, &Failure{Code: 400, Description: "Bad Request: file must be non-empty"}
	case kind == "photo" && n > 10<<20:
		return nil, &Failure{Code: 400, Description: "Bad Request: PHOTO_INVALID_DIMENSIONS"}
	case n > 50<<20:
		return nil, &Failure{Code: 413, Description: "Request Entity Too Large"}
	}
	return &Upload{Kind: kind, Name: fh.Filename, Size: int(n), SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// checkCaption applies the caption rules.
func checkCaption(caption, mode string) (Failure, bool) {
	visible := caption
	if strings.EqualFold(mode, "HTML") {
		v, err := ParseHTML(caption)
		if err != nil {
			return Failure{Code: 400, Description: "Bad Request: can't parse entities: " + err.Error()}, true
		}
		visible = v
	}
	if utf16Len(visible) > 1024 {
		return Failure{Code: 400, Description: "Bad Request: message caption is too long"}, true
	}
	return Failure{}, false
}

// checkTarget applies the chat and topic checks of checkSend.
func (s *Server) checkTarget(chat int64, thread int) (Failure, bool) {
	return s.checkSend(chat, thread, "-", "")
}

func (s *Server) sendFile(w http.ResponseWriter, r *http.Request, method string) {
	kind := strings.ToLower(strings.TrimPrefix(method, "send"))
	chat := formInt(r, "chat_id")
	thread := int(formInt(r, "message_thread_id"))
	caption, mode := r.Form.Get("caption"), r.Form.Get("parse_mode")
	if f, bad := s.checkTarget(chat, thread); bad {
		writeErr(w, f)
		return
	}
	if f, bad := checkCaption(caption, mode); bad {
		writeErr(w, f)
		return
	}
	file, fail := uploaded(r, kind, kind)
	if fail != nil {
		writeErr(w, *fail)
		return
	}
	s.mu.Lock()
	s.nextMsg++
	sent := Sent{Method: method, MessageID: s.nextMsg, ChatID: chat, ThreadID: thread, Text: caption,
		ParseMode: mode, ReplyTo: int(formInt(r, "reply_to_message_id")), Via: viaOf(r), Upload: file}
	at := s.recordLocked(sent)
	s.mu.Unlock()
	s.onSent(sent, at)
	writeOK(w, s.messageJSON(sent))
}

// inputMedia is one element of sendMediaGroup's media.
type inputMedia struct {
	Type      string `json:"type"`
	Media     string `json:"media"`
	Caption   string `json:"caption"`
	ParseMode string `json:"parse_mode"`
}

func (s *Server) sendMediaGroup(w http.ResponseWriter, r *http.Request) {
	chat := formInt(r, "chat_id")
	thread := int(formInt(r, "message_thread_id"))
	if f, bad := s.checkTarget(chat, thread); bad {
		writeErr(w, f)
		return
	}
	var media []inputMedia
	if err := json.Unmarshal([]byte(r.Form.Get("media")), &media); err != nil {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: can't parse media JSON object"})
		return
	}
	if len(media) < 2 || len(media) > 10 {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: wrong number of media in the album"})
		return
	}
	family := func(t string) string {
		if t == "photo" || t == "video" {
			return "visual"
		}
		return t
	}
	files := make([]*Upload, len(media))
	for i, m := range media {
		if m.Type == "voice" || family(m.Type) != family(media[0].Type) {
			writeErr(w, Failure{Code: 400, Description: fmt.Sprintf("Bad Request: %s can't be mixed with %s in an album", m.Type, media[0].Type)})
			return
		}
		field, ok := strings.CutPrefix(m.Media, "attach://")
		if !ok {
			writeErr(w, Failure{Code: 400, Description: "Bad Request: the fake takes uploads only (attach://)"})
			return
		}
		if f, bad := checkCaption(m.Caption, m.ParseMode); bad {
			writeErr(w, f)
			return
		}
		file, fail := uploaded(r, field, m.Type)
		if fail != nil {
			writeErr(w, *fail)
			return
		}
		files[i] = file
	}
	s.mu.Lock()
	group := "album" + strconv.Itoa(s.nextMsg+1)
	var sents []Sent
	for i, m := range media {
		s.nextMsg++
		sent := Sent{Method: "sendMediaGroup", MessageID: s.nextMsg, ChatID: chat, ThreadID: thread, Text: m.Caption,
			ParseMode: m.ParseMode, ReplyTo: int(formInt(r, "reply_to_message_id")), Via: viaOf(r), Upload: files[i], MediaGroupID: group}
		sents = append(sents, sent)
	}
	ats := make([]time.Time, len(sents))
	for i, sent := range sents {
		ats[i] = s.recordLocked(sent)
	}
	s.mu.Unlock()
	out := make([]map[string]any, 0, len(sents))
	for i, sent := range sents {
		s.onSent(sent, ats[i])
		out = append(out, s.messageJSON(sent))
	}
	writeOK(w, out)
}
