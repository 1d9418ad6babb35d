package discordtest

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/bwmarrin/discordgo"
)

// fileStore holds the attachments the fake serves as Discord's CDN
// (https://cdn.discordapp.com/attachments/<channel>/<id>/<name>; Client
// sends that host to the fake like every other).
type fileStore struct {
	mu        sync.Mutex // guards the fields below
	files     map[string][]byte
	types     map[string]string
	downloads []string
	next      int
}

// AddAttachment makes data downloadable and returns the attachment to put
// on a message (URL on cdn.discordapp.com, size, content type).
func (s *Server) AddAttachment(channelID, name, contentType string, data []byte) *discordgo.MessageAttachment {
	fs := &s.files
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.files == nil {
		fs.files, fs.types = map[string][]byte{}, map[string]string{}
	}
	fs.next++
	id := strconv.Itoa(800000 + fs.next)
	path := fmt.Sprintf("/attachments/%s/%s/%s", channelID, id, name)
	fs.files[path], fs.types[path] = data, contentType
	return &discordgo.MessageAttachment{ID: id, URL: "https://cdn.discordapp.com" + path,
		ProxyURL: "https://media.discordapp.net" + path, Filename: name, ContentType: contentType, Size: len(data)}
}

// Downloads returns the attachment paths downloaded so far, in order.
func (s *Server) Downloads() []string {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	return append([]string(nil), s.files.downloads...)
}

func (s *Server) serveAttachment(w http.ResponseWriter, r *http.Request) {
	fs := &s.files
	fs.mu.Lock()
	data, ok := fs.files[r.URL.Path]
	ct := fs.types[r.URL.Path]
	if ok {
		fs.downloads = append(fs.downloads, r.URL.Path)
	}
	fs.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}
