package llm

import (
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

func TestTakesImages(t *testing.T) {
	c := ProviderConfig{Type: TypeOpenAI, VisionModels: []string{"gpt-4o*", "llava"}}
	for model, want := range map[string]bool{"gpt-4o": true, "gpt-4o-mini": true, "llava": true, "gpt-3.5-turbo": false, "llava-2": false} {
		if got := c.TakesImages(model); got != want {
			t.Errorf("TakesImages(%q) = %v, want %v", model, got, want)
		}
	}
	if (ProviderConfig{Type: TypeOpenAI}).TakesImages("gpt-4o") {
		t.Error("no visionModels: no model takes images")
	}
	if err := (ProviderConfig{Type: TypeOpenAI, VisionModels: []string{"gpt-[4"}}).Validate(); err == nil {
		t.Error("a bad pattern was accepted")
	}
}

func TestWithoutImages(t *testing.T) {
	img := sessions.Content{Type: sessions.BlockImage, Data: "AAAA", MimeType: "image/png"}
	in := []sessions.Message{
		sessions.UserText("plain", time.Unix(0, 0)),
		{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: "look"}, img}},
	}
	out := WithoutImages(in)
	if got := out[1].Content[1]; got.Type != sessions.BlockText || got.Text != "[image "+NoImagesNote+"]" {
		t.Fatalf("image became %+v", got)
	}
	if in[1].Content[1].Type != sessions.BlockImage {
		t.Fatal("the input was changed")
	}
	if &WithoutImages(in[:1])[0] != &in[0] {
		t.Error("messages without images are returned as they are")
	}
}
