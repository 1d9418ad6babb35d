package configs

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gateway/gateway/channels"
)

// maxDepth bounds the nesting of a config file (the deepest real key is
// about 8 levels); deeper documents are refused before they are decoded.
const maxDepth = 64

// parseYAML parses a config document into plain maps, keeping keys as
// typed and empty maps (`groups: {"-100123": {}}` is an allow-list entry).
// It refuses documents nested deeper than maxDepth.
func parseYAML(data []byte) (map[string]any, *yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, syntaxError(err)
	}
	if len(doc.Content) == 0 {
		return map[string]any{}, nil, nil
	}
	root := doc.Content[0]
	if n := tooDeep(root, 0); n != nil {
		return nil, nil, &Error{Line: n.Line, Column: n.Column, Msg: fmt.Sprintf("nesting deeper than %d levels", maxDepth)}
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, &Error{Line: root.Line, Column: root.Column, Msg: "the document must be a mapping of keys"}
	}
	m := map[string]any{}
	if err := root.Decode(&m); err != nil {
		return nil, nil, syntaxError(err)
	}
	return m, root, nil
}

// noDocument reports whether data holds no YAML document: empty, blank
// or only comments (what parseYAML reads as no settings at all). Data that
// does not parse holds one, wrongly: its error is parseYAML's to report.
func noDocument(data []byte) bool {
	var doc yaml.Node
	return yaml.Unmarshal(data, &doc) == nil && len(doc.Content) == 0
}

// yamlLineRe finds the line in a YAML parser's message.
var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a YAML parser error into an *Error at its line (the
// parser gives no column).
func syntaxError(err error) error {
	msg := err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{Line: line, Column: 1, Msg: "YAML syntax: " + m[2]}
	}
	return &Error{Msg: "YAML syntax: " + strings.TrimPrefix(msg, "yaml: ")}
}

func tooDeep(n *yaml.Node, depth int) *yaml.Node {
	if depth > maxDepth {
		return n
	}
	for _, c := range n.Content {
		if d := tooDeep(c, depth+1); d != nil {
			return d
		}
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

type structField struct {
	name string
	typ  reflect.Type
}

// structKeys lists the mapstructure keys of t (squashed embeds included).
func structKeys(t reflect.Type) []structField {
	var out []structField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		parts := strings.Split(f.Tag.Get("mapstructure"), ",")
		if parts[0] == "-" || !f.IsExported() {
			continue
		}
		if len(parts) > 1 && parts[1] == "squash" {
			out = append(out, structKeys(f.Type)...)
			continue
		}
		name := parts[0]
		if name == "" {
			name = f.Name
		}
		out = append(out, structField{name, f.Type})
	}
	return out
}

func fieldType(fields []structField, key string) (reflect.Type, bool) {
	for _, f := range fields {
		if strings.EqualFold(f.name, key) {
			return f.typ, true
		}
	}
	return nil, false
}

// nearest is the field name closest to key (edit distance at most 3).
func nearest(key string, fields []structField) string {
	best, bestD := "", 4
	for _, f := range fields {
		if d := editDistance(strings.ToLower(key), strings.ToLower(f.name)); d < bestD {
			best, bestD = f.name, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// numberToString lets numeric YAML values fill string fields (Telegram
// ids written as numbers); other type mismatches stay errors.
func numberToString(from, to reflect.Type, data any) (any, error) {
	if to.Kind() != reflect.String {
		return data, nil
	}
	switch v := data.(type) {
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	}
	return data, nil
}

// boolToInherit reads thread.inheritParent written as a boolean (its form
// before the modes had names): true is digest, false none.
func boolToInherit(from, to reflect.Type, data any) (any, error) {
	if b, ok := data.(bool); ok && to == reflect.TypeFor[channels.Inherit]() {
		return channels.InheritFromBool(b), nil
	}
	return data, nil
}
