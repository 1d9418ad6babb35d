package configs

import (
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"time"
)

// Redacted replaces a secret's value in Tree: a word every secret key
// accepts, so the printed config still validates.
const Redacted = "REDACTED"

// Tree is c as a config file writes it, for `config print`: keys under
// their YAML names (a squashed section's keys in its parent's map),
// durations as text, the defaults a section fills in itself (its
// WithDefaults) written out, keys left out whose value is empty where
// leaving them out means the same, and secrets redacted (Redacted; URL
// passwords as xxxxx). Loaded again, the tree means what c means: the same
// config, but for the redacted secrets.
func Tree(c *Config) map[string]any {
	t, _ := tree(reflect.ValueOf(c), reflect.ValueOf(Default()), "").(map[string]any)
	return t
}

// tree turns v into maps and lists; def is what the loader leaves at v's
// place when the file omits it (invalid: the zero value).
func tree(v, def reflect.Value, key string) any {
	v, def = indirect(v), indirect(def)
	if !v.IsValid() {
		return nil
	}
	if def.IsValid() && def.Type() != v.Type() {
		def = reflect.Value{}
	}
	v = withDefaults(v)
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Struct:
		out := map[string]any{}
		structTree(v, def, out)
		return out
	case reflect.Map:
		out := map[string]any{}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			ks := fmt.Sprint(k.Interface())
			out[ks] = tree(v.MapIndex(k), reflect.Value{}, ks) // a map entry starts empty
		}
		return out
	case reflect.Slice, reflect.Array:
		out := make([]any, 0, v.Len())
		for i := 0; i < v.Len(); i++ {
			var d reflect.Value // the decoder fills a list over the default's items
			if def.IsValid() && i < def.Len() {
				d = def.Index(i)
			}
			out = append(out, tree(v.Index(i), d, key))
		}
		return out
	case reflect.String:
		if s := v.String(); s != "" && isSecretKey(key) {
			return Redacted
		}
		return RedactURL(v.String())
	default:
		return v.Interface()
	}
}

// structTree writes v's fields into out; a squashed field's keys go into
// out itself, as they sit in the file.
func structTree(v, def reflect.Value, out map[string]any) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		parts := strings.Split(f.Tag.Get("mapstructure"), ",")
		if parts[0] == "-" {
			continue
		}
		var d reflect.Value
		if def.IsValid() {
			d = def.Field(i)
		}
		if len(parts) > 1 && parts[1] == "squash" {
			fv, fd := indirect(withDefaults(v.Field(i))), indirect(d)
			if fd.IsValid() && fd.Type() != fv.Type() {
				fd = reflect.Value{}
			}
			if fv.IsValid() && fv.Kind() == reflect.Struct {
				structTree(fv, fd, out)
			}
			continue
		}
		name := parts[0]
		if name == "" {
			name = f.Name
		}
		fv := v.Field(i)
		if empty(withDefaults(fv)) && (!d.IsValid() || empty(d)) {
			continue // omitted, the loader leaves it empty too
		}
		out[name] = tree(fv, d, name)
	}
}

// empty says whether v is a zero value, an empty list or map, or a
// struct of such fields.
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Map, reflect.Slice:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && !empty(v.Field(i)) {
				return false
			}
		}
		return true
	}
	return v.IsZero()
}

func indirect(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// withDefaults applies v's own WithDefaults (a method taking nothing and
// returning v's type), the defaults its package fills in at run time.
func withDefaults(v reflect.Value) reflect.Value {
	if !v.IsValid() || v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		return v
	}
	m := v.MethodByName("WithDefaults")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || m.Type().Out(0) != v.Type() {
		return v
	}
	return m.Call(nil)[0]
}

// isSecretKey says whether a config key holds a secret: token, apiKey,
// secretToken, password, an Authorization, Cookie or X-Api-Key header, a
// *_TOKEN, *_KEY, *_PASS or *_CREDENTIALS variable... but not tokenFile (a
// path), *Tokens (counts) or mainKey (a name).
func isSecretKey(key string) bool {
	k := strings.ToLower(key)
	for _, suffix := range []string{"token", "apikey", "secret", "password", "secrettoken",
		"authorization", "api-key", "api_key", // header and env names (mcp.servers.*.headers, env)
		"_key", "-key", "secretkey", "privatekey", "accesskey", "_pass", "-pass", "passwd", "credentials", "cookie"} {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// RedactURL hides the password of a URL value (storage.postgres.url may
// hold one, in its user info or as a password parameter) as url.Redacted
// does; anything else is returned as it is.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return s
	}
	_, inUser := u.User.Password()
	q := u.Query()
	if !inUser && !q.Has("password") {
		return s
	}
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
