package webfetch

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// describe fills res.Title, Text and Note from the body by content type:
// HTML is reduced to its readable text, text types pass through, anything
// else is described by type and size only.
func describe(res *Result, body []byte, contentLength int64, u *url.URL, maxChars int) {
	mt, _, err := mime.ParseMediaType(res.ContentType)
	if err != nil || mt == "" {
		mt = sniff(body)
	}
	var text string
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		res.Title, text = readable(decode(body, res.ContentType), u)
	case strings.HasPrefix(mt, "text/") || textual(mt):
		text = string(decode(body, res.ContentType))
	default:
		size := fmt.Sprintf("%d bytes", res.Bytes)
		if contentLength > res.Bytes {
			size = fmt.Sprintf("%d bytes", contentLength)
		} else if res.Truncated {
			size = fmt.Sprintf("more than %d bytes", res.Bytes)
		}
		res.Note = fmt.Sprintf("content of type %s, %s, not shown", mt, size)
		if strings.HasPrefix(mt, "image/") && !res.Truncated {
			res.Image = body
		}
		return
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	if utf8.RuneCountInString(text) > maxChars {
		r := []rune(text)
		text = string(r[:maxChars])
		res.Truncated = true
		res.Note = fmt.Sprintf("text cut to %d characters", maxChars)
	} else if res.Truncated {
		res.Note = "body cut at the size limit"
	}
	res.Text = text
}

func textual(mt string) bool {
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-yaml", "application/yaml":
		return true
	}
	return strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

func sniff(body []byte) string {
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(body))
	return mt
}

// decode converts body to UTF-8 by the declared or sniffed charset.
func decode(body []byte, contentType string) []byte {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return body
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		return body
	}
	return b.Bytes()
}

// readable returns the title and main text of an HTML page, or all its
// visible text when readability finds no article.
func readable(body []byte, u *url.URL) (title, text string) {
	a, err := readability.FromReader(bytes.NewReader(body), u)
	if err == nil && a.Node != nil {
		title = a.Title()
		var b strings.Builder
		if a.RenderText(&b) == nil && strings.TrimSpace(b.String()) != "" {
			return title, tidy(b.String())
		}
	}
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return title, ""
	}
	var b strings.Builder
	plainText(doc, &b)
	return title, tidy(b.String())
}

// plainText writes the visible text of n, one block element per line.
func plainText(n *html.Node, b *strings.Builder) {
	if n.Type == html.ElementNode {
		switch n.Data {
		case "script", "style", "noscript", "template", "head", "svg":
			return
		}
	}
	if n.Type == html.TextNode {
		b.WriteString(n.Data)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		plainText(c, b)
	}
	if n.Type == html.ElementNode {
		switch n.Data {
		case "p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "pre", "blockquote":
			b.WriteByte('\n')
		}
	}
}

// tidy collapses runs of blanks within lines and of empty lines.
func tidy(s string) string {
	var out []string
	blank := false
	for _, line := range strings.Split(s, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, line)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
