package configs

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
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
		return nil, nil, fmt.Errorf("config: parse YAML: %w", err)
	}
	if len(doc.Content) == 0 {
		return map[string]any{}, nil, nil
	}
	root := doc.Content[0]
	if n := tooDeep(root, 0); n != nil {
		return nil, nil, fmt.Errorf("config: line %d column %d: nesting deeper than %d levels", n.Line, n.Column, maxDepth)
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("config: line %d column %d: the document must be a mapping of keys", root.Line, root.Column)
	}
	m := map[string]any{}
	if err := root.Decode(&m); err != nil {
		return nil, nil, fmt.Errorf("config: parse YAML: %w", err)
	}
	return m, root, nil
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

// checkKeys walks the document against the Config type and reports the
// first unknown key with its position, as typed, and the nearest valid key.
func checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || n.Kind != yaml.MappingNode || isScalarType(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		fields := structKeys(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fieldType(fields, k.Value)
			if !ok {
				msg := fmt.Sprintf("config: line %d column %d: unknown key %q in %s", k.Line, k.Column, k.Value, orTop(path))
				if s := nearest(k.Value, fields); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				return fmt.Errorf("%s", msg)
			}
			if err := checkKeys(n.Content[i+1], ft, join(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		for _, c := range n.Content {
			if err := checkKeys(c, t.Elem(), path+"[]"); err != nil {
				return err
			}
		}
	}
	return nil
}

func orTop(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func isScalarType(t reflect.Type) bool {
	tu := reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	return t == reflect.TypeOf(time.Duration(0)) || t.Implements(tu) || reflect.PointerTo(t).Implements(tu)
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

// setPath sets a dotted key (segments) in m, reusing existing keys that
// differ only in case, creating maps on the way.
func setPath(m map[string]any, segs []string, v any) {
	for i, s := range segs {
		k := s
		for existing := range m {
			if strings.EqualFold(existing, s) {
				k = existing
				break
			}
		}
		if i == len(segs)-1 {
			m[k] = v
			return
		}
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
}

// envValue types an environment value as YAML would (10 → int, true →
// bool, 1s → string), so env overrides decode like the file.
func envValue(s string) any {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil || v == nil {
		return s
	}
	switch v.(type) {
	case map[string]any, []any:
		return s // structured values come as comma lists or not at all
	}
	return v
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
