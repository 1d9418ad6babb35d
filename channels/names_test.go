package channels

import "testing"

func TestSaysName(t *testing.T) {
	for _, tt := range []struct {
		text, name string
		want       bool
	}{
		{"hey Clawd, what now?", "Clawd", true},
		{"CLAWD help", "clawd", true},
		{"ask clawd", "Clawd", true},
		{"Clawdia says hi", "Clawd", false},
		{"myclawd", "Clawd", false},
		{"clawd_bot", "Clawd", false},
		{"Clawdia then Clawd", "Clawd", true},
		{"Привет, Бот!", "бот", true},
		{"Test Bot: hello", "Test Bot", true},
		{"anything", "", false},
		{"", "Clawd", false},
	} {
		if got := SaysName(tt.text, tt.name); got != tt.want {
			t.Errorf("SaysName(%q, %q) = %v, want %v", tt.text, tt.name, got, tt.want)
		}
	}
}

func FuzzSaysName(f *testing.F) {
	f.Add("hey Clawd", "clawd")
	f.Add("ǅ x", "ǆ")
	f.Fuzz(func(t *testing.T, text, name string) {
		_ = SaysName(text, name) // never panics, whatever the bytes
	})
}

func TestSentLogForgetsOldest(t *testing.T) {
	l := SentLog{Size: 2}
	l.Add("c", "1", Address{ChatID: "c", ThreadID: "7"})
	l.Add("c", "2", Address{ChatID: "c"})
	if a, ok := l.Lookup("c", "1"); !ok || a.ThreadID != "7" {
		t.Fatalf("Lookup 1 = %+v, %v", a, ok)
	}
	l.Add("c", "3", Address{ChatID: "c"})
	if _, ok := l.Lookup("c", "1"); ok {
		t.Error("the oldest entry was kept past Size")
	}
	for _, id := range []string{"2", "3"} {
		if _, ok := l.Lookup("c", id); !ok {
			t.Errorf("entry %s lost", id)
		}
	}
	if _, ok := l.Lookup("other", "2"); ok {
		t.Error("an id matched in another chat")
	}
}
