package configs

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// TestPrintRoundTrips: `config print` of every shipped config (and of one
// with accounts, rooms and squashed sections) loads again, means the same
// (printing the reloaded config gives the same tree, and the configs are
// equal but for the defaults a section fills in itself and the redacted
// secrets) and names no Go field.
func TestPrintRoundTrips(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("testdata", "roundtrip.yaml"))
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, err := LoadBytes(data, nil)
			if err != nil {
				t.Fatal(err)
			}
			printed, err := yaml.Marshal(Tree(first))
			if err != nil {
				t.Fatal(err)
			}
			if m := regexp.MustCompile(`(?m)^\s*(?:- )?([A-Z]\w*):`).FindSubmatch(printed); m != nil {
				t.Errorf("printed a Go field name %q:\n%s", m[1], printed)
			}
			second, err := LoadBytes(printed, nil)
			if err != nil {
				t.Fatalf("the printed config does not load: %v\n%s", err, printed)
			}
			if d := cmp.Diff(Tree(first), Tree(second)); d != "" {
				t.Errorf("printing the printed config differs (-first +second):\n%s", d)
			}
			a, b := comparable(first), comparable(second)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("the printed config means something else:\nfirst  %+v\nsecond %+v", a, b)
			}
		})
	}
}

// comparable is c with what print may legitimately change undone: each
// section's own defaults filled in, secrets replaced, empty lists and
// maps as nil.
func comparable(c *Config) any {
	return normalize(reflect.ValueOf(c), "")
}

func normalize(v reflect.Value, key string) any {
	v = indirect(v)
	if !v.IsValid() {
		return nil
	}
	v = withDefaults(v)
	switch v.Kind() {
	case reflect.Struct:
		out := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				out[v.Type().Field(i).Name] = normalize(v.Field(i), v.Type().Field(i).Name)
			}
		}
		return out
	case reflect.Map:
		if v.Len() == 0 {
			return nil
		}
		out := map[string]any{}
		for _, k := range v.MapKeys() {
			out[k.String()] = normalize(v.MapIndex(k), k.String())
		}
		return out
	case reflect.Slice:
		if v.Len() == 0 {
			return nil
		}
		out := []any{}
		for i := 0; i < v.Len(); i++ {
			out = append(out, normalize(v.Index(i), key))
		}
		return out
	case reflect.String:
		if v.String() != "" && isSecretKey(key) {
			return Redacted
		}
		return RedactURL(v.String())
	}
	return v.Interface()
}
