package web

import "github.com/gateway/gateway/channels"

// MediaPath is where the API serves a reply's file by its SHA-256 (with
// the bearer token, like every /api route).
const MediaPath = "/api/media/"

// mediaFile is one file of a reply as the page gets it, in a "media"
// event after the reply's text: the page fetches url with its token and
// shows a picture inline, anything else as a download link named name.
type mediaFile struct {
	URL      string `json:"url"`
	Kind     string `json:"kind"`
	MimeType string `json:"mimeType"`
	Name     string `json:"name"`
	Size     int64  `json:"size"`
	Caption  string `json:"caption,omitempty"` // on a group's first file
}

// mediaData is the "media" event of a reply's files.
func mediaData(groups []channels.MediaGroup) map[string]any {
	var files []mediaFile
	for _, g := range groups {
		for i, m := range g.Items {
			f := mediaFile{URL: MediaPath + m.SHA256, Kind: string(m.Kind), MimeType: m.MimeType, Name: m.FileName, Size: m.Size}
			if i == 0 {
				f.Caption = g.Caption
			}
			files = append(files, f)
		}
	}
	return map[string]any{"files": files}
}
