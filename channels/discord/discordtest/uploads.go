package discordtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/bwmarrin/discordgo"
)

// Message posts with files, as Discord takes them: multipart/form-data
// with the message as payload_json and the files as files[n]; at most 10
// files, each within the upload limit of the channel's guild by its boost
// tier (PremiumTier: 10, 25, 50, 100 MB; DMs 10 MB), else 413 with code
// 40005.

// Upload is one attached file of a post.
type Upload struct {
	Name        string
	ContentType string
	Size        int
	SHA256      string
}

// DefaultUploadLimits are Discord's limits by boost tier 0–3, in bytes
// (Options.UploadLimits when zero).
var DefaultUploadLimits = [4]int64{10 << 20, 25 << 20, 50 << 20, 100 << 20}

// readMessageBody decodes a post, JSON or multipart; on failure it returns
// the status and the error body to answer.
func (s *Server) readMessageBody(r *http.Request) (messageBody, []Upload, int, map[string]any) {
	var body messageBody
	invalid := map[string]any{"message": "Invalid Form Body", "code": 50035}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			return body, nil, http.StatusBadRequest, invalid
		}
		return body, nil, 0, nil
	}
	limit := s.uploadLimit(r.PathValue("id"))
	r.Body = http.MaxBytesReader(nil, r.Body, limit*MaxFilesPerPost+1<<20)
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		return body, nil, http.StatusRequestEntityTooLarge, map[string]any{"message": "Request entity too large", "code": 40005}
	}
	if err := json.Unmarshal([]byte(r.FormValue("payload_json")), &body); err != nil {
		return body, nil, http.StatusBadRequest, invalid
	}
	var files []Upload
	for n := 0; ; n++ {
		fhs := r.MultipartForm.File["files["+strconv.Itoa(n)+"]"]
		if len(fhs) == 0 {
			break
		}
		if n == MaxFilesPerPost {
			return body, nil, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body: files: too many", "code": 50035}
		}
		fh := fhs[0]
		if fh.Size > limit {
			return body, nil, http.StatusRequestEntityTooLarge, map[string]any{"message": "Request entity too large", "code": 40005}
		}
		f, err := fh.Open()
		if err != nil {
			return body, nil, http.StatusBadRequest, invalid
		}
		h := sha256.New()
		size, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return body, nil, http.StatusBadRequest, invalid
		}
		files = append(files, Upload{Name: fh.Filename, ContentType: fh.Header.Get("Content-Type"), Size: int(size),
			SHA256: hex.EncodeToString(h.Sum(nil))})
	}
	return body, files, 0, nil
}

// MaxFilesPerPost is Discord's limit of files on one message.
const MaxFilesPerPost = 10

// uploadLimit is the limit in channelID: its guild's tier, DMs tier 0.
func (s *Server) uploadLimit(channelID string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	limits := s.opts.UploadLimits
	if limits == [4]int64{} {
		limits = DefaultUploadLimits
	}
	c, ok := s.channels[channelID]
	if !ok || c.GuildID == "" {
		return limits[0]
	}
	g, ok := s.guilds[c.GuildID]
	if !ok {
		return limits[0]
	}
	return limits[min(max(int(g.PremiumTier), 0), 3)]
}

// attachmentsOf describes the uploaded files as the message's attachments.
// Call with s.mu held.
func (s *Server) attachmentsOf(channelID string, files []Upload) []*discordgo.MessageAttachment {
	var out []*discordgo.MessageAttachment
	for i, f := range files {
		out = append(out, &discordgo.MessageAttachment{ID: fmt.Sprintf("%s%d", f.SHA256[:8], i), Filename: f.Name,
			ContentType: f.ContentType, Size: f.Size,
			URL: fmt.Sprintf("https://cdn.discordapp.com/attachments/%s/%s/%s", channelID, f.SHA256[:8], f.Name)})
	}
	return out
}
