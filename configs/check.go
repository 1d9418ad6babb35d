package configs

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gateway/gateway/channels"
)

// checkTree walks the document against the Config type before it is
// decoded and refuses the first key that is unknown or holds a value of
// the wrong kind, with the key's position, the key as typed, what was
// expected and a suggestion: the decoder's own errors name no position.
func checkTree(root *yaml.Node) error {
	if root == nil {
		return nil
	}
	return checkNode(nil, root, reflect.TypeOf(Config{}), "")
}

var (
	durationType  = reflect.TypeOf(time.Duration(0))
	textUnmarshal = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// checkNode checks value v, written under key k (nil for a list item or
// the document), against type t; path is the key's path as typed.
func checkNode(k, v *yaml.Node, t reflect.Type, path string) error {
	v = deref(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil || v.ShortTag() == "!!null" {
		return nil // the default stays
	}
	at := k
	if at == nil {
		at = v
	}
	fail := func(msg, hint string) error {
		return &Error{Line: at.Line, Column: at.Column, Key: path, Msg: msg, Hint: hint}
	}
	if t == durationType {
		return checkDuration(v, fail)
	}
	if t == reflect.TypeFor[channels.Inherit]() && v.ShortTag() == "!!bool" {
		return nil // thread.inheritParent: true or false (boolToInherit)
	}
	if t.Implements(textUnmarshal) || reflect.PointerTo(t).Implements(textUnmarshal) {
		if v.Kind == yaml.ScalarNode {
			if v.ShortTag() != "!!str" {
				return fail("expected text, got "+describe(v), "")
			}
			u := reflect.New(t).Interface().(encoding.TextUnmarshaler)
			if err := u.UnmarshalText([]byte(v.Value)); err != nil {
				return fail(err.Error(), "")
			}
			return nil
		}
		if t.Kind() != reflect.Struct { // a struct may be written as a mapping too
			return fail("expected text, got "+describe(v), "")
		}
	}
	switch t.Kind() {
	case reflect.Interface:
		return nil
	case reflect.Struct:
		return checkStruct(v, t, path, fail)
	case reflect.Map:
		if v.Kind != yaml.MappingNode {
			return fail("expected a mapping of keys, got "+describe(v), "")
		}
		for i := 0; i+1 < len(v.Content); i += 2 {
			kn := v.Content[i]
			if kn.ShortTag() == "!!merge" {
				if err := checkMerge(kn, v.Content[i+1], t, path); err != nil {
					return err
				}
				continue
			}
			if tag := kn.ShortTag(); (tag == "!!int" || tag == "!!float") && numberText(kn) != kn.Value {
				return &Error{Line: kn.Line, Column: kn.Column, Key: join(path, kn.Value),
					Msg:  fmt.Sprintf("the key %s reads as the number %s", kn.Value, numberText(kn)),
					Hint: fmt.Sprintf("quote it if you mean the text: %q", kn.Value)}
			}
			if err := checkNode(kn, v.Content[i+1], t.Elem(), join(path, kn.Value)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice, reflect.Array:
		switch {
		case v.Kind == yaml.SequenceNode:
			for i, c := range v.Content {
				if err := checkNode(nil, c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			return nil
		case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" && t.Elem().Kind() == reflect.String:
			return nil // a comma-separated list
		default:
			return fail("expected a list, got "+describe(v), "write [a, b] or one item per line under the key, each starting with -")
		}
	}
	if v.Kind != yaml.ScalarNode {
		return fail(fmt.Sprintf("expected %s, got %s", kindWord(t), describe(v)), "")
	}
	return checkScalar(v, t, fail)
}

// checkStruct checks a mapping against a struct's keys (squashed embeds
// included); an unknown key gets the nearest known one as a suggestion.
func checkStruct(v *yaml.Node, t reflect.Type, path string, fail func(msg, hint string) error) error {
	if v.Kind != yaml.MappingNode {
		return fail("expected a mapping of keys, got "+describe(v), "")
	}
	fields := structKeys(t)
	for i := 0; i+1 < len(v.Content); i += 2 {
		kn := v.Content[i]
		if kn.ShortTag() == "!!merge" {
			if err := checkMerge(kn, v.Content[i+1], t, path); err != nil {
				return err
			}
			continue
		}
		for j := 0; j < i; j += 2 {
			if prev := v.Content[j]; strings.EqualFold(prev.Value, kn.Value) {
				return &Error{Line: kn.Line, Column: kn.Column, Key: join(path, kn.Value),
					Msg:  fmt.Sprintf("set twice, also as %s at line %d: keys are read without case", prev.Value, prev.Line),
					Hint: "keep one of them"}
			}
		}
		ft, ok := fieldType(fields, kn.Value)
		if !ok {
			e := &Error{Line: kn.Line, Column: kn.Column, Key: join(path, kn.Value), Msg: "unknown key"}
			if s := nearest(kn.Value, fields); s != "" {
				e.Hint = fmt.Sprintf("did you mean %q?", s)
			}
			return e
		}
		if err := checkNode(kn, v.Content[i+1], ft, join(path, kn.Value)); err != nil {
			return err
		}
	}
	return nil
}

// checkMerge checks what a YAML merge key (<<: *defaults, or a list of
// such) brings into a mapping of type t: its keys are the mapping's.
func checkMerge(kn, v *yaml.Node, t reflect.Type, path string) error {
	v = deref(v)
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	for _, it := range items {
		if it = deref(it); it.Kind != yaml.MappingNode {
			return &Error{Line: kn.Line, Column: kn.Column, Key: join(path, kn.Value),
				Msg: "a merge key takes a mapping or a list of mappings, got " + describe(it)}
		}
		if err := checkNode(kn, it, t, path); err != nil {
			return err
		}
	}
	return nil
}

// checkScalar checks a scalar against a bool, number or text field. A
// number may fill a text field (ids are often written as numbers).
func checkScalar(v *yaml.Node, t reflect.Type, fail func(msg, hint string) error) error {
	tag := v.ShortTag()
	switch t.Kind() {
	case reflect.Bool:
		if tag == "!!bool" {
			return nil
		}
		switch strings.ToLower(v.Value) {
		case "yes", "no", "on", "off", "y", "n":
			return fail(fmt.Sprintf("expected true or false, got %q", v.Value),
				"write true or false: YAML 1.2 reads yes/no and on/off as text")
		}
		return fail("expected true or false, got "+describe(v), "")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if tag == "!!int" {
			return nil
		}
		return fail("expected a whole number, got "+describe(v), numberHint(v))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if tag == "!!int" && !strings.HasPrefix(v.Value, "-") {
			return nil
		}
		return fail("expected a whole number not below 0, got "+describe(v), numberHint(v))
	case reflect.Float32, reflect.Float64:
		if tag == "!!int" || tag == "!!float" {
			return nil
		}
		return fail("expected a number, got "+describe(v), numberHint(v))
	case reflect.String:
		switch tag {
		case "!!int", "!!float":
			if s := numberText(v); s != v.Value {
				return fail(fmt.Sprintf("the number %s reads as %s", v.Value, s), fmt.Sprintf("quote it if you mean the text: %q", v.Value))
			}
			return nil
		case "!!str":
			return nil
		case "!!timestamp":
			return fail(fmt.Sprintf("expected text, got the date %s", v.Value), fmt.Sprintf("quote it if you mean the text: %q", v.Value))
		}
		return fail("expected text, got "+describe(v), fmt.Sprintf("quote it if you mean the text: %q", v.Value))
	}
	return nil
}

// numberText is the text a number fills a text key with (numberToString):
// its digits as YAML reads it, which is not always as written (0123 is
// octal 83, 0x1F is 31, 1e3 is 1000).
func numberText(v *yaml.Node) string {
	var x any
	if err := v.Decode(&x); err != nil {
		return v.Value
	}
	s, err := numberToString(nil, reflect.TypeOf(""), x)
	if str, ok := s.(string); ok && err == nil {
		return str
	}
	return v.Value
}

// checkDuration checks a duration: text such as 90s, 5m or 1h30m. A bare
// number other than 0 is refused: the decoder would read it as
// nanoseconds.
func checkDuration(v *yaml.Node, fail func(msg, hint string) error) error {
	const hint = "write it with a unit, like 500ms, 90s, 5m or 1h30m"
	if v.Kind != yaml.ScalarNode {
		return fail("expected a duration, got "+describe(v), hint)
	}
	switch v.ShortTag() {
	case "!!str":
		if _, err := time.ParseDuration(v.Value); err != nil {
			return fail(fmt.Sprintf("%q is not a duration", v.Value), hint)
		}
		return nil
	case "!!int":
		if v.Value == "0" {
			return nil
		}
		return fail(fmt.Sprintf("%s has no unit", v.Value), fmt.Sprintf("write %ss for seconds", v.Value))
	}
	return fail("expected a duration, got "+describe(v), hint)
}

// numberHint suggests how to write a number given as text.
func numberHint(v *yaml.Node) string {
	if v.ShortTag() == "!!str" {
		if _, err := time.ParseDuration(v.Value); err == nil {
			return "this key is a count, not a duration: write the number alone"
		}
		return "write the number without quotes or units"
	}
	return ""
}

// describe names what a node holds, for "got ..." in errors.
func describe(v *yaml.Node) string {
	switch v.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	switch v.ShortTag() {
	case "!!str":
		return fmt.Sprintf("the text %q", v.Value)
	case "!!bool":
		return "the boolean " + v.Value
	case "!!int", "!!float":
		return "the number " + v.Value
	}
	return fmt.Sprintf("%q", v.Value)
}

// kindWord names what a scalar field wants.
func kindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "text"
	case reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "a whole number"
	}
}

// typeAt is the type of the key at segs below t, and the key's path with
// the fields' own names (map keys match any segment, struct keys without
// case).
func typeAt(t reflect.Type, segs []string) (reflect.Type, string, bool) {
	key := ""
	for _, sg := range segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map:
			t, key = t.Elem(), join(key, sg)
		case reflect.Struct:
			found := false
			for _, f := range structKeys(t) {
				if strings.EqualFold(f.name, sg) {
					t, key, found = f.typ, join(key, f.name), true
					break
				}
			}
			if !found {
				return nil, "", false
			}
		default:
			return nil, "", false
		}
	}
	return t, key, true
}
