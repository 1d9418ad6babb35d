package dispatch

import (
	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
)

// outMedia is the files a turn attached (the message tool's send_media),
// as the reply carries them to the adapter; their bytes are in the
// outbound media store (Options.Media), named by SHA-256.
func outMedia(sends []agents.MediaSend) []channels.MediaGroup {
	if len(sends) == 0 {
		return nil
	}
	groups := make([]channels.MediaGroup, 0, len(sends))
	for _, s := range sends {
		g := channels.MediaGroup{Caption: s.Caption, Items: make([]channels.OutMedia, 0, len(s.Files))}
		for _, f := range s.Files {
			g.Items = append(g.Items, channels.OutMedia{Kind: channels.MediaKind(f.Kind), MimeType: f.MimeType,
				FileName: f.FileName, Size: f.Size, SHA256: f.SHA256})
		}
		groups = append(groups, g)
	}
	return groups
}
