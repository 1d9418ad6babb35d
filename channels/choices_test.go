package channels

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestChoiceKeys(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	k, err := NewChoiceKeys(bytes.Repeat([]byte{1}, ChoiceKeySize), 24*time.Hour, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	chat := Address{Channel: "telegram", AccountID: "default", ChatID: "-100123"}
	cs, err := k.Question(chat, []string{"Oui", "Non, merci 🙏"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if len(c.Data) > 64 || !IsChoiceData(c.Data) {
			t.Fatalf("data %q: longer than Telegram's 64 bytes or of another shape", c.Data)
		}
		if _, err := k.Verify(chat, c.Data, c.Label); err != nil {
			t.Fatalf("Verify(%q): %v", c.Label, err)
		}
	}
	other, _ := NewChoiceKeys(bytes.Repeat([]byte{2}, ChoiceKeySize), 0, nil)
	for name, tc := range map[string]struct {
		keys        *ChoiceKeys
		chat        Address
		data, label string
		want        error
	}{
		"other label":   {k, chat, cs[0].Data, "Non, merci 🙏", ErrChoiceForged},
		"other chat":    {k, Address{Channel: "telegram", AccountID: "default", ChatID: "-100124"}, cs[0].Data, "Oui", ErrChoiceForged},
		"other account": {k, Address{Channel: "telegram", AccountID: "b2", ChatID: "-100123"}, cs[0].Data, "Oui", ErrChoiceForged},
		"other key":     {other, chat, cs[0].Data, "Oui", ErrChoiceForged},
		"other index":   {k, chat, strings.Replace(cs[0].Data, ".0.", ".1.", 1), "Oui", ErrChoiceForged},
		"truncated":     {k, chat, cs[0].Data[:len(cs[0].Data)-1], "Oui", ErrChoiceForged},
		"a path":        {k, chat, "../../etc/passwd", "Oui", ErrChoiceForged},
		"a command":     {k, chat, "/new", "/new", ErrChoiceForged},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := tc.keys.Verify(tc.chat, tc.data, tc.label); !errors.Is(err, tc.want) {
				t.Errorf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
	now = now.Add(25 * time.Hour)
	if _, err := k.Verify(chat, cs[0].Data, "Oui"); !errors.Is(err, ErrChoiceExpired) {
		t.Errorf("a day later: %v, want ErrChoiceExpired", err)
	}
}

func TestCheckChoiceLabels(t *testing.T) {
	for name, tc := range map[string]struct {
		labels []string
		want   string
	}{
		"none":      {nil, "0 given"},
		"too many":  {strings.Split("a b c d e f g h i j k", " "), "11 given"},
		"empty":     {[]string{""}, "empty"},
		"spaces":    {[]string{" a"}, "surrounding spaces"},
		"long":      {[]string{strings.Repeat("x", MaxChoiceLabel+1)}, "longer than"},
		"lines":     {[]string{"a\nb"}, "several lines"},
		"command":   {[]string{"/reset"}, "looks like a command"},
		"bang":      {[]string{"!stop"}, "looks like a command"},
		"duplicate": {[]string{"Yes", "yes"}, "given twice"},
	} {
		t.Run(name, func(t *testing.T) {
			if err := CheckChoiceLabels(tc.labels); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckChoiceLabels(%q) = %v, want %q", tc.labels, err, tc.want)
			}
		})
	}
	if err := CheckChoiceLabels([]string{"Yes", "No"}); err != nil {
		t.Error(err)
	}
}

func BenchmarkChoiceVerify(b *testing.B) {
	k, _ := NewChoiceKeys(bytes.Repeat([]byte{1}, ChoiceKeySize), 0, nil)
	chat := Address{Channel: "telegram", AccountID: "default", ChatID: "-100123"}
	cs, _ := k.Question(chat, []string{"Yes", "No"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Verify(chat, cs[1].Data, "No"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestChoiceQuestionFor: buttons signed for a question id verify for that
// id only, and signing again from the id, the labels and the time asked
// gives the same data (what a history redraws).
func TestChoiceQuestionFor(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	k, err := NewChoiceKeys(bytes.Repeat([]byte{1}, ChoiceKeySize), 24*time.Hour, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	chat := Address{Channel: "web", AccountID: "default", ChatID: "peer-1"}
	const id = "6f1c8f62-4c5e-4a53-9d1e-2b7f0c3a9e11"
	cs, err := k.QuestionFor(chat, id, now.Add(-time.Hour), []string{"Tea", "Coffee"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := k.QuestionFor(chat, id, now.Add(-time.Hour+time.Second), []string{"Tea", "Coffee"})
	if err != nil || again[0] != cs[0] || again[1] != cs[1] {
		t.Fatalf("signed again: %v %v, want %v", again, err, cs)
	}
	if err := k.VerifyQuestion(chat, id, cs[1].Data, "Coffee"); err != nil {
		t.Fatalf("VerifyQuestion: %v", err)
	}
	if err := k.VerifyQuestion(chat, "7f1c8f62-4c5e-4a53-9d1e-2b7f0c3a9e11", cs[1].Data, "Coffee"); !errors.Is(err, ErrChoiceForged) {
		t.Fatalf("another question's id: %v, want ErrChoiceForged", err)
	}
	if err := k.VerifyQuestion(chat, id, cs[0].Data, "Coffee"); !errors.Is(err, ErrChoiceForged) {
		t.Fatalf("another label: %v, want ErrChoiceForged", err)
	}
	random, _ := k.Question(chat, []string{"Tea"})
	if err := k.VerifyQuestion(chat, id, random[0].Data, "Tea"); !errors.Is(err, ErrChoiceForged) {
		t.Fatalf("a button of a random nonce: %v, want ErrChoiceForged", err)
	}
	old, _ := k.QuestionFor(chat, id, now.Add(-25*time.Hour), []string{"Tea"})
	if err := k.VerifyQuestion(chat, id, old[0].Data, "Tea"); !errors.Is(err, ErrChoiceExpired) {
		t.Fatalf("asked 25 h ago: %v, want ErrChoiceExpired", err)
	}
	if _, err := k.QuestionFor(chat, id, now, []string{"/reset"}); err == nil {
		t.Fatal("a command as a label was signed")
	}
}

// TestChoiceExpired: Expired says of a question's time asked what Verify
// says of its buttons' presses, on either side of the expiry and within
// the minute the data keeps.
func TestChoiceExpired(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 30, 0, time.UTC)
	k, err := NewChoiceKeys(bytes.Repeat([]byte{1}, ChoiceKeySize), 24*time.Hour, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	chat := Address{Channel: "web", AccountID: "default", ChatID: "peer-1"}
	const id = "6f1c8f62-4c5e-4a53-9d1e-2b7f0c3a9e11"
	var expired, live int
	for _, ago := range []time.Duration{time.Hour, 24*time.Hour - 2*time.Minute, 24*time.Hour - 10*time.Second,
		24 * time.Hour, 24*time.Hour + 40*time.Second, 24*time.Hour + 2*time.Minute, 8 * 24 * time.Hour} {
		asked := now.Add(-ago)
		cs, err := k.QuestionFor(chat, id, asked, []string{"Tea"})
		if err != nil {
			t.Fatal(err)
		}
		verr := k.VerifyQuestion(chat, id, cs[0].Data, "Tea")
		if got, want := k.Expired(asked), errors.Is(verr, ErrChoiceExpired); got != want || (verr != nil && !want) {
			t.Errorf("asked %v ago: Expired %v, Verify %v", ago, got, verr)
		}
		if k.Expired(asked) {
			expired++
		} else {
			live++
		}
	}
	if expired == 0 || live == 0 {
		t.Errorf("%d expired, %d live: want both", expired, live)
	}
}
