package telegramtest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// File is a file the fake serves through getFile and its download URL.
type File struct {
	ID   string // file_id
	Path string // file_path, e.g. "photos/file_1.jpg"
	Data []byte
	// Size is the file_size getFile reports (default len(Data)); set it
	// larger than Data to lie like a broken server would.
	Size int
	// ContentType of the download (default application/octet-stream).
	ContentType string
	// Chunked sends the download without Content-Length.
	Chunked bool
}

// Download is one recorded file download.
type Download struct {
	Path string
	// Bytes is how much of the file the client read before it went away.
	Bytes int
}

// fileStore holds a Server's files; its own mutex keeps it apart from the
// message state.
type fileStore struct {
	mu        sync.Mutex // guards the fields below
	files     map[string]*File
	byPath    map[string]*File
	getFile   []string // file_ids asked for
	downloads []Download
}

// AddFile makes f available; missing ID and Path are generated. It returns
// the file_id.
func (s *Server) AddFile(f File) string {
	fs := &s.files
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.files == nil {
		fs.files, fs.byPath = map[string]*File{}, map[string]*File{}
	}
	n := len(fs.files) + 1
	if f.ID == "" {
		f.ID = fmt.Sprintf("file-%d", n)
	}
	if f.Path == "" {
		f.Path = fmt.Sprintf("documents/file_%d", n)
	}
	if f.Size == 0 {
		f.Size = len(f.Data)
	}
	fs.files[f.ID] = &f
	fs.byPath[f.Path] = &f
	return f.ID
}

// GetFileCalls returns the file_ids getFile was asked for, in order.
func (s *Server) GetFileCalls() []string {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	return append([]string(nil), s.files.getFile...)
}

// Downloads returns the recorded file downloads, in order.
func (s *Server) Downloads() []Download {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	return append([]Download(nil), s.files.downloads...)
}

// PhotoSizes is the "photo" field of a message offering file ids as the
// sizes of one photo, smallest first (sizes as given, 90·i pixels wide).
func PhotoSizes(ids []string, sizes []int) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		w := 90 * (i + 1)
		out[i] = map[string]any{"file_id": id, "file_unique_id": "u-" + id, "width": w, "height": w, "file_size": sizes[i]}
	}
	return out
}

// getFileMethod answers getFile like the Bot API: a File object with
// file_path, or 400 for an unknown id. Files above 20 MB are refused as
// Telegram does unless the fake was told otherwise by a smaller Size.
func (s *Server) getFileMethod(w http.ResponseWriter, r *http.Request) {
	id := r.Form.Get("file_id")
	fs := &s.files
	fs.mu.Lock()
	fs.getFile = append(fs.getFile, id)
	f, ok := fs.files[id]
	fs.mu.Unlock()
	switch {
	case !ok:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: invalid file_id"})
	case f.Size > 20<<20:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: file is too big"})
	default:
		writeOK(w, map[string]any{"file_id": f.ID, "file_unique_id": "u-" + f.ID, "file_size": f.Size, "file_path": f.Path})
	}
}

// serveFile answers GET /file/bot<token>/<file_path>, recording how many
// bytes the client took.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/file/")
	tokenPart, path, ok := strings.Cut(rest, "/")
	if !ok || tokenPart != "bot"+s.opts.Token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	fs := &s.files
	fs.mu.Lock()
	f, found := fs.byPath[path]
	fs.mu.Unlock()
	if !found {
		http.NotFound(w, r)
		return
	}
	ct := f.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	if !f.Chunked {
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
	}
	sent := 0
	for sent < len(f.Data) {
		n, err := w.Write(f.Data[sent:min(sent+32<<10, len(f.Data))])
		sent += n
		if err != nil {
			break
		}
	}
	fs.mu.Lock()
	fs.downloads = append(fs.downloads, Download{Path: path, Bytes: sent})
	fs.mu.Unlock()
	s.mu.Lock()
	s.notifyLocked()
	s.mu.Unlock()
}

// WaitDownloads waits until n downloads have ended (a download ends when
// the whole file was written or the client went away) and returns them.
func (s *Server) WaitDownloads(ctx context.Context, n int) ([]Download, error) {
	err := s.wait(ctx, func() bool {
		s.files.mu.Lock() // lock order: s.mu, then files.mu
		defer s.files.mu.Unlock()
		return len(s.files.downloads) >= n
	})
	return s.Downloads(), err
}
