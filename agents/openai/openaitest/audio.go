package openaitest

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
)

// Transcription is one recorded /audio/transcriptions request.
type Transcription struct {
	Model    string
	FileName string
	Data     []byte
	Header   http.Header
}

// audioState is the transcription side of a Server.
type audioState struct {
	mu       sync.Mutex // guards the fields below
	requests []Transcription
	text     func(Transcription) string
}

// SetTranscription scripts the text of transcriptions; the default is
// "transcript of <file name>".
func (s *Server) SetTranscription(fn func(Transcription) string) {
	s.audio.mu.Lock()
	defer s.audio.mu.Unlock()
	s.audio.text = fn
}

// Transcriptions returns a copy of the recorded transcription requests.
func (s *Server) Transcriptions() []Transcription {
	s.audio.mu.Lock()
	defer s.audio.mu.Unlock()
	return append([]Transcription(nil), s.audio.requests...)
}

// transcribe answers a multipart transcription request like OpenAI does
// for response_format json: {"text": "..."}.
func (s *Server) transcribe(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		writeError(w, http.StatusBadRequest, "", "invalid_request_error", "bad multipart body: "+err.Error())
		return
	}
	f, hdr, err := r.FormFile("file")
	if err != nil {
		writeError(w, http.StatusBadRequest, "", "invalid_request_error", "missing file")
		return
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		writeError(w, http.StatusBadRequest, "", "invalid_request_error", "reading file: "+err.Error())
		return
	}
	t := Transcription{Model: r.FormValue("model"), FileName: hdr.Filename, Data: data, Header: r.Header.Clone()}
	if t.Model == "" {
		writeError(w, http.StatusBadRequest, "", "invalid_request_error", "model is required")
		return
	}
	s.audio.mu.Lock()
	s.audio.requests = append(s.audio.requests, t)
	fn := s.audio.text
	s.audio.mu.Unlock()
	text := "transcript of " + t.FileName
	if fn != nil {
		text = fn(t)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"text": text})
}
