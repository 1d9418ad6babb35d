package telegramtest

import (
	"fmt"
	"strings"
)

// htmlTags are the tags Telegram's HTML parse mode accepts.
var htmlTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true, "strike": true,
	"del": true, "span": true, "tg-spoiler": true, "a": true, "code": true, "pre": true,
	"blockquote": true, "tg-emoji": true,
}

// ParseHTML checks text the way Telegram's HTML parse mode does (known
// tags only, properly nested and closed; &, < and > escaped outside tags)
// and returns the visible text. Errors read like Telegram's.
func ParseHTML(text string) (string, error) {
	var vis strings.Builder
	var stack []string
	for i := 0; i < len(text); {
		c := text[i]
		switch c {
		case '<':
			end := strings.IndexByte(text[i:], '>')
			if end < 0 {
				return "", fmt.Errorf("unclosed start tag at byte offset %d", i)
			}
			tag := text[i+1 : i+end]
			if strings.HasPrefix(tag, "/") {
				name := strings.TrimSpace(tag[1:])
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Errorf("unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", i, top(stack), name)
				}
				stack = stack[:len(stack)-1]
			} else {
				name, attrs, _ := strings.Cut(tag, " ")
				if !htmlTags[name] {
					return "", fmt.Errorf("unsupported start tag \"%s\" at byte offset %d", name, i)
				}
				if name == "a" && !strings.HasPrefix(strings.TrimSpace(attrs), "href=\"") {
					return "", fmt.Errorf("tag \"a\" must have attribute href at byte offset %d", i)
				}
				if strings.Count(attrs, "\"")%2 != 0 {
					return "", fmt.Errorf("unclosed attribute value at byte offset %d", i)
				}
				stack = append(stack, name)
			}
			i += end + 1
		case '>':
			return "", fmt.Errorf("character '>' is reserved at byte offset %d", i)
		case '&':
			end := strings.IndexByte(text[i:], ';')
			if end < 0 || end > 10 {
				return "", fmt.Errorf("character '&' is reserved at byte offset %d", i)
			}
			switch ent := text[i+1 : i+end]; {
			case ent == "lt":
				vis.WriteByte('<')
			case ent == "gt":
				vis.WriteByte('>')
			case ent == "amp":
				vis.WriteByte('&')
			case ent == "quot":
				vis.WriteByte('"')
			case strings.HasPrefix(ent, "#"):
				vis.WriteByte('?')
			default:
				return "", fmt.Errorf("unsupported HTML entity \"&%s;\" at byte offset %d", ent, i)
			}
			i += end + 1
		default:
			vis.WriteByte(c)
			i++
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("can't find end tag corresponding to start tag \"%s\"", stack[len(stack)-1])
	}
	return vis.String(), nil
}

func top(stack []string) string {
	if len(stack) == 0 {
		return ""
	}
	return stack[len(stack)-1]
}
