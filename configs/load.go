package configs

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/go-viper/mapstructure/v2"

	"github.com/gateway/gateway/internal/secret"
)

// Load reads the YAML file at path (empty: defaults only), applies
// GATEWAY_* environment overrides, decodes strictly over the defaults,
// reads *File secrets and validates. Errors name the offending key.
func Load(path string) (*Config, error) {
	var data []byte
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err) // names the path and the operation
		}
		data = b
	}
	return load(path, data, os.Environ())
}

// ErrEmpty is under LoadSaved's error for a file with no settings.
var ErrEmpty = errors.New("config: the file holds no settings")

// LoadSaved is Load for a file that may be read while it is being saved,
// as a hot reload reads it: a file holding no YAML document (empty, or
// only comments) is refused instead of loaded as the defaults. A save
// that truncates before it writes (a shell redirect whose command is
// still producing the config, an editor writing in place) leaves the file
// so for as long as the writer takes; its defaults would replace the
// running config (every channel account gone, so nobody admitted). At
// start an empty file still means the defaults (Load); the error wraps
// ErrEmpty, so that a daemon running those can tell the file unchanged.
func LoadSaved(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err) // names the path and the operation
	}
	if noDocument(data) {
		return nil, &Error{File: path, Msg: "the file is empty (no settings, at most comments): " +
			"a save still being written, or a file emptied by mistake; the running config stays", cause: ErrEmpty}
	}
	return load(path, data, os.Environ())
}

// LoadBytes is Load over YAML bytes and an explicit environment. The file
// is parsed keeping keys as typed and empty maps (allow-list entries such as
// `groups: {"-100123": {}}`); unknown keys are reported with their line,
// column and the nearest valid key; values must have the key's type (a
// number may fill a text field: ids are often written as numbers).
// `config validate`, `run` and hot reload all load through here (Load).
// Every error it returns is an *Error; its position names no file.
func LoadBytes(data []byte, environ []string) (*Config, error) {
	return load("", data, environ)
}

// load is LoadBytes for the file named file (in errors).
func load(file string, data []byte, environ []string) (*Config, error) {
	m, root, err := parseYAML(data)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = file
			return nil, ce
		}
		return nil, &Error{File: file, Msg: strings.TrimPrefix(err.Error(), "config: ")}
	}
	src := &source{file: file, root: root, env: map[string]string{}}
	if err := checkTree(root); err != nil {
		return nil, src.locate(err)
	}
	ovs, unknown, err := envOverrides(m, environ)
	if err != nil {
		return nil, src.locate(err)
	}
	for _, o := range ovs {
		src.env[strings.ToLower(o.path())] = o.name
	}
	if err := checkEnv(ovs); err != nil {
		return nil, src.locate(err)
	}
	replaced := replaceSecrets(m, root, ovs)
	applyEnv(m, ovs)
	cfg := Default()
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:      cfg,
		ErrorUnused: true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			numberToString,
			boolToInherit,
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
			mapstructure.TextUnmarshallerHookFunc(),
		),
	})
	if err != nil {
		return nil, fmt.Errorf("config: decoder: %w", err)
	}
	if err := dec.Decode(m); err != nil {
		return nil, src.decodeError(err)
	}
	if err := cfg.readSecrets(); err != nil {
		return nil, src.locate(err)
	}
	cfg.StateDir = expandHome(cfg.StateDir)
	if err := cfg.Validate(); err != nil {
		return nil, src.locate(err)
	}
	cfg.envShadowed = append(src.shadowed(ovs), replaced...)
	cfg.envUnknown = unknownNotices(unknown)
	return cfg, nil
}

// shadowed are the notices of the keys both the file and the environment
// set, in the variables' order: the environment's value applies.
func (s *source) shadowed(ovs []override) []string {
	var out []string
	for _, o := range ovs {
		segs := make([]string, len(o.segs))
		for i, sg := range o.segs {
			segs[i] = sg.name
		}
		if typed, _, ok := find(s.root, segs); ok {
			out = append(out, fmt.Sprintf("%s: set in the file and by %s: the environment's value applies "+
				"(editing the file changes nothing; unset the variable to let the file decide)", typed, o.name))
		}
	}
	return out
}

func (c *Config) readSecrets() error {
	if c.HTTP.TokenFile != "" {
		if c.HTTP.Token != "" { // which one wins would be a guess
			return errors.New("http.tokenFile: set either token or tokenFile, not both")
		}
		t, err := secret.ReadFile(c.HTTP.TokenFile)
		if err != nil {
			return fmt.Errorf("config: http.tokenFile: %w", err)
		}
		c.HTTP.Token = t
	}
	if err := c.Storage.Postgres.readSecret(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.MCP.CheckSecrets(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return home + p[1:]
		}
	}
	return p
}
