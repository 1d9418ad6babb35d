package configs

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a refused configuration, in the one style every config error
// has: where (the file, the key's line and column, or the GATEWAY_*
// variable that set it), the key as typed in the file, what is wrong and,
// when there is one, a suggestion. `config validate`, `run` and hot
// reload all report it as Load returns it.
type Error struct {
	// File is the config file's path ("" for LoadBytes).
	File string
	// Line and Column locate the key in the file (1-based); zero when the
	// key is not in the file (a default, or set by Env).
	Line, Column int
	// Env is the environment variable that set the key, if one did.
	Env string
	// Key is the key's path, as typed in the file where it is there
	// (channels.telegram.accounts.default.requireMention).
	Key string
	// Msg says what is wrong or what was expected.
	Msg string
	// Hint is a suggestion ("did you mean \"main\"?"), or "".
	Hint string
	// cause is what Unwrap returns (ErrEmpty), or nil.
	cause error
}

// Unwrap returns the error's cause (ErrEmpty), or nil.
func (e *Error) Unwrap() error { return e.cause }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	switch {
	case e.Env != "":
		fmt.Fprintf(&b, "env %s: ", e.Env)
	case e.Line > 0 && e.File != "":
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Column)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d column %d: ", e.Line, e.Column)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Hint != "" {
		fmt.Fprintf(&b, " (%s)", e.Hint)
	}
	return b.String()
}

// source is what errors are located in: the file's name and tree, and
// which keys the environment set.
type source struct {
	file string
	root *yaml.Node
	// env maps a key path (lower case, "." between segments, no indexes)
	// to the variable that set it.
	env map[string]string
}

// locate turns a validation error whose message starts with a key path
// ("agents.list[0].id: ...", as every section's Validate writes them)
// into an *Error at that key. An error that already is one, or that names
// no key, gets the file's name only.
func (s *source) locate(err error) error {
	var ce *Error
	if errors.As(err, &ce) {
		if ce.File == "" {
			ce.File = s.file
		}
		if ce.Line == 0 && ce.Env == "" && ce.Key != "" {
			at := s.at(ce.Key)
			ce.Key, ce.Line, ce.Column, ce.Env = at.Key, at.Line, at.Column, at.Env
		}
		return ce
	}
	msg := strings.TrimPrefix(err.Error(), "config: ")
	path, rest := splitKeyPath(msg)
	if path == "" {
		return &Error{File: s.file, Msg: msg}
	}
	e := s.at(path)
	e.Msg = rest
	e.Hint = enumHint(rest)
	return e
}

// at is an *Error at path: its position in the file (or the variable that
// set it) and the path as typed.
func (s *source) at(path string) *Error {
	segs := splitPath(path)
	e := &Error{File: s.file, Key: path}
	if v := s.envFor(segs); v != "" {
		e.Env = v
		return e
	}
	if typed, n, ok := find(s.root, segs); ok {
		e.Key, e.Line, e.Column = typed, n.Line, n.Column
	}
	return e
}

// envFor is the variable that set segs or a key above it, or "".
func (s *source) envFor(segs []string) string {
	var names []string
	for _, sg := range segs {
		if _, isIndex := index(sg); !isIndex {
			names = append(names, strings.ToLower(sg))
		}
	}
	for n := len(names); n > 0; n-- {
		if v, ok := s.env[strings.Join(names[:n], ".")]; ok {
			return v
		}
	}
	return ""
}

// keyPathRe matches a key path at the start of a message: segments of
// key characters, with [index] or [map key] parts.
var keyPathRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_\-]*(?:(?:\.[A-Za-z0-9_\-*/@+]+)|(?:\[[^\]]*\]))*`)

// splitKeyPath splits "a.b[0].c: rest" into the path and the rest; path is
// "" when the message does not start with one followed by ": ".
func splitKeyPath(msg string) (path, rest string) {
	p := keyPathRe.FindString(msg)
	if p == "" || !strings.HasPrefix(msg[len(p):], ": ") {
		return "", msg
	}
	return p, msg[len(p)+2:]
}

// splitPath splits a key path into segments: "a.list[0].b" is a, list,
// [0], b; "accounts[default]" (mapstructure's form) is accounts, default.
func splitPath(path string) []string {
	var segs []string
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			i := strings.IndexByte(part, '[')
			if i < 0 {
				segs = append(segs, part)
				break
			}
			if i > 0 {
				segs = append(segs, part[:i])
			}
			j := strings.IndexByte(part[i:], ']')
			if j < 0 {
				segs = append(segs, part[i:])
				break
			}
			inner := part[i+1 : i+j]
			if _, err := strconv.Atoi(inner); err == nil {
				segs = append(segs, "["+inner+"]")
			} else {
				segs = append(segs, inner)
			}
			part = part[i+j+1:]
		}
	}
	return segs
}

// index reports whether seg is a list index ("[3]") and which.
func index(seg string) (int, bool) {
	if !strings.HasPrefix(seg, "[") || !strings.HasSuffix(seg, "]") {
		return 0, false
	}
	i, err := strconv.Atoi(seg[1 : len(seg)-1])
	return i, err == nil
}

// find walks segs down the document (keys compared without case, as the
// decoder does) and returns the path as typed and the node of the last
// key (a list item: the item). ok is false when the path is not all in
// the file.
func find(root *yaml.Node, segs []string) (typed string, at *yaml.Node, ok bool) {
	n := root
	for _, sg := range segs {
		n = deref(n)
		if n == nil {
			return "", nil, false
		}
		if i, isIndex := index(sg); isIndex {
			if n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return "", nil, false
			}
			typed += sg
			at, n = n.Content[i], n.Content[i]
			continue
		}
		if n.Kind != yaml.MappingNode {
			return "", nil, false
		}
		var next *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if strings.EqualFold(n.Content[j].Value, sg) {
				at, next = n.Content[j], n.Content[j+1]
				typed = join(typed, n.Content[j].Value)
				break
			}
		}
		if next == nil {
			return "", nil, false
		}
		n = next
	}
	return typed, at, at != nil
}

// deref follows an alias to its anchor.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// enumRe matches the way sections refuse a value outside a fixed set:
// `"x" is not a, b or c`.
var enumRe = regexp.MustCompile(`^"([^"]*)" is not ((?:[a-z0-9][a-z0-9_-]*, )*[a-z0-9][a-z0-9_-]*) or ([a-z0-9][a-z0-9_-]*)$`)

// enumHint suggests the nearest allowed value for an enum error.
func enumHint(msg string) string {
	m := enumRe.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	var opts []structField
	for _, o := range append(strings.Split(m[2], ", "), m[3]) {
		opts = append(opts, structField{name: o})
	}
	if s := nearest(m[1], opts); s != "" && s != m[1] {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return ""
}

// mapstructureRe finds the key a decoding error names: 'a.b[c].d'.
var mapstructureRe = regexp.MustCompile(`'([^']+)' (.*)`)

// decodeError locates an error of the decoder (a value that reached it
// with the wrong type, from the environment: the file's values are checked
// before).
func (s *source) decodeError(err error) error {
	m := mapstructureRe.FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{File: s.file, Msg: err.Error()}
	}
	e := s.at(m[1])
	e.Msg = m[2]
	return e
}
