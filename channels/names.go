package channels

import (
	"strings"
	"unicode"
)

// Namer is implemented by adapters that know the bot's display name on
// their platform (Telegram's first name, Discord's user name): where a
// room sets mentionByName, a message that says the name addresses the bot
// as a mention does.
type Namer interface {
	// BotName is the display name, "" before the adapter connected.
	BotName() string
}

// SaysName reports whether text holds name as a whole word (any case;
// letters or digits on either side make it part of another word).
func SaysName(text, name string) bool {
	name = strings.TrimSpace(name)
	if name == "" {
		return false
	}
	lt, ln := strings.ToLower(text), strings.ToLower(name)
	for i := 0; ; {
		j := strings.Index(lt[i:], ln)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(ln)
		if !wordRuneBefore(lt[:start]) && !wordRuneAfter(lt[end:]) {
			return true
		}
		i = start + 1
	}
}

func wordRuneBefore(s string) bool {
	if s == "" {
		return false
	}
	r := []rune(s)
	return isWordRune(r[len(r)-1])
}

func wordRuneAfter(s string) bool {
	for _, r := range s {
		return isWordRune(r)
	}
	return false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
