package llm

import (
	"fmt"
	"path"

	"github.com/gateway/gateway/sessions"
)

// ImageTaker is implemented by providers that know which of their models
// take image input. A provider without it takes none.
type ImageTaker interface {
	TakesImages(model string) bool
}

// NoImagesNote replaces an image sent to a model that takes none.
const NoImagesNote = "not shown: this model does not take images"

// TakesImages reports whether model matches one of c.VisionModels (shell
// patterns as path.Match reads them; "*" matches every model).
func (c ProviderConfig) TakesImages(model string) bool {
	for _, p := range c.VisionModels {
		if ok, _ := path.Match(p, model); ok {
			return true
		}
	}
	return false
}

func validateVisionModels(pats []string) error {
	for _, p := range pats {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return fmt.Errorf("visionModels: %q is not a valid pattern", p)
		}
	}
	return nil
}

// Images reports whether p takes images with model.
func Images(p Provider, model string) bool {
	t, ok := p.(ImageTaker)
	return ok && t.TakesImages(model)
}

// WithoutImages returns msgs with every image block replaced by a text
// note, for a model that takes no images. msgs is not changed.
func WithoutImages(msgs []sessions.Message) []sessions.Message {
	var out []sessions.Message
	for i, m := range msgs {
		for j, c := range m.Content {
			if c.Type != sessions.BlockImage {
				continue
			}
			if out == nil {
				out = append([]sessions.Message(nil), msgs...)
			}
			if &out[i].Content[0] == &msgs[i].Content[0] {
				out[i].Content = append([]sessions.Content(nil), m.Content...)
			}
			out[i].Content[j] = sessions.Content{Type: sessions.BlockText, Text: "[image " + NoImagesNote + "]"}
		}
	}
	if out == nil {
		return msgs
	}
	return out
}
