package sessions

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MatchTrigger reports whether text asks for a manual reset. A trigger
// matches case-insensitively as the whole message (surrounding white space
// ignored) or as a prefix followed by white space; rest is what follows,
// trimmed, and becomes the first message of the new session (or, for
// "/new <model>", names the model; the caller decides). trigger is the
// configured spelling. A nil cfg.ResetTriggers means /new and /reset; an
// empty non-nil list disables triggers. Callers strip a group's bot mention
// (and Telegram's "@botname" command suffix) before matching.
func MatchTrigger(cfg ResetConfig, text string) (trigger string, rest string, ok bool) {
	triggers := cfg.ResetTriggers
	if triggers == nil {
		triggers = defaultResetTriggers
	}
	text = strings.TrimSpace(text)
	for _, tr := range triggers {
		tr = strings.TrimSpace(tr)
		if tr == "" || len(text) < len(tr) || !strings.EqualFold(text[:len(tr)], tr) {
			continue
		}
		if len(text) == len(tr) {
			return tr, "", true
		}
		// Any white space ends the trigger: a non-breaking space from a
		// mobile keyboard as much as a space, a tab or a newline.
		if r, _ := utf8.DecodeRuneInString(text[len(tr):]); unicode.IsSpace(r) {
			return tr, strings.TrimSpace(text[len(tr):]), true
		}
	}
	return "", "", false
}
