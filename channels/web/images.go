package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gateway/gateway/channels"
)

// MaxImages is the most images one chat request may carry (all within
// MaxBody).
const MaxImages = 8

// ChatImage is one image of a chat request (SPEC §7 images): base64 data
// (a data: URL is accepted too) and its MIME type. In JSON it is an object
// {data, mimeType?} or, as seed 000's API sends it, a plain string (a data:
// URL or base64), whose type the bytes tell.
type ChatImage struct {
	Data     string `json:"data"`
	MimeType string `json:"mimeType,omitempty"`
}

// UnmarshalJSON reads either form; an object with unknown fields is
// refused, as the request's other fields are.
func (c *ChatImage) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '"' {
		*c = ChatImage{}
		return json.Unmarshal(t, &c.Data)
	}
	type plain ChatImage // no methods: no recursion
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("image: want a data: URL or base64 string, or {data, mimeType}: %w", err)
	}
	*c = ChatImage(p)
	return nil
}

// imageAttachments decodes a request's images into inline attachments; the
// error is a message for the client.
func imageAttachments(imgs []ChatImage) ([]channels.Attachment, error) {
	if len(imgs) > MaxImages {
		return nil, fmt.Errorf("images: at most %d per message", MaxImages)
	}
	out := make([]channels.Attachment, 0, len(imgs))
	for i, img := range imgs {
		data, mime := img.Data, img.MimeType
		if rest, ok := strings.CutPrefix(data, "data:"); ok {
			head, payload, found := strings.Cut(rest, ",")
			if !found || !strings.HasSuffix(head, ";base64") {
				return nil, fmt.Errorf("images[%d].data: a data: URL must be base64", i)
			}
			if mime == "" {
				mime = strings.TrimSuffix(head, ";base64")
			}
			data = payload
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, fmt.Errorf("images[%d].data: not base64: %w", i, err)
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("images[%d].data: empty", i)
		}
		// The bytes decide what the image is; a claimed type must agree.
		sniffed := http.DetectContentType(b)
		if !strings.HasPrefix(sniffed, "image/") {
			return nil, fmt.Errorf("images[%d]: not an image (%s)", i, sniffed)
		}
		if mime != "" && !strings.EqualFold(mime, sniffed) {
			return nil, fmt.Errorf("images[%d].mimeType: %q but the data is %s", i, mime, sniffed)
		}
		out = append(out, channels.Attachment{Kind: channels.MediaImage, MimeType: sniffed, Size: int64(len(b)),
			FileName: fmt.Sprintf("image-%d%s", i+1, ext(sniffed)), Data: b})
	}
	return out, nil
}

func ext(mime string) string {
	switch mime {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	}
	return ""
}
