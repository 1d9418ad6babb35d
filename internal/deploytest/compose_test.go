package deploytest

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of a Compose file these tests read.
type composeFile struct {
	Services map[string]service `yaml:"services"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
	Volumes map[string]any `yaml:"volumes"`
}

// service is one Compose service. Volumes and secrets use the short
// syntax only: a long-syntax entry fails to decode, so the test must learn
// it before a deploy file may use it.
type service struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command     []string `yaml:"command"`
	Environment envMap   `yaml:"environment"`
	Volumes     []string `yaml:"volumes"`
	Secrets     []string `yaml:"secrets"`
	Ports       []string `yaml:"ports"`
}

// envMap is a service's environment, written as a map or as a list of
// NAME=value.
type envMap map[string]string

func (e *envMap) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var list []string
		if err := n.Decode(&list); err != nil {
			return err
		}
		*e = envMap{}
		for _, kv := range list {
			k, v, _ := strings.Cut(kv, "=")
			(*e)[k] = v
		}
		return nil
	}
	var m map[string]string
	if err := n.Decode(&m); err != nil {
		return err
	}
	*e = m
	return nil
}

// mount is one short-syntax volume: a bind mount when Source is a path.
type mount struct {
	Source, Target string
	Bind           bool
}

func parseMount(s string) mount {
	parts := strings.Split(s, ":")
	m := mount{Source: parts[0]}
	if len(parts) > 1 {
		m.Target = parts[1]
	}
	m.Bind = strings.HasPrefix(m.Source, ".") || strings.HasPrefix(m.Source, "/")
	return m
}

// interpRe matches Compose's ${NAME}, ${NAME:-default}, ${NAME-default},
// ${NAME:?error} and ${NAME?error}.
var interpRe = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// interpolate substitutes variables as `docker compose` does from .env;
// a variable with neither a value in env nor a default fails the test (the
// example .env must define everything the file needs).
func interpolate(t *testing.T, file string, text string, env map[string]string) string {
	t.Helper()
	return interpRe.ReplaceAllStringFunc(text, func(m string) string {
		g := interpRe.FindStringSubmatch(m)
		if v, ok := env[g[1]]; ok && (v != "" || !strings.HasPrefix(g[2], ":")) {
			return v
		}
		if strings.HasSuffix(g[2], "-") {
			return g[3]
		}
		t.Errorf("%s: variable %s has no value in the example .env and no default", file, g[1])
		return ""
	})
}

// readEnvFile reads KEY=value lines (comments and blank lines skipped).
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	env := map[string]string{}
	if path == "" {
		return env
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("example .env: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=value", path, line)
		}
		env[k] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return env
}

// loadCompose reads, interpolates and decodes a Compose file strictly.
func loadCompose(t *testing.T, path string, env map[string]string) (*composeFile, string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal([]byte(interpolate(t, path, string(raw), env)), &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(c.Services) == 0 {
		t.Fatalf("%s: no services", path)
	}
	return &c, string(raw)
}

// gatewayServices are the services running the gateway image, sorted.
func (c *composeFile) gatewayServices() []string {
	var names []string
	for name, s := range c.Services {
		if s.Image == "gateway:latest" || (s.Build != nil && s.Build.Dockerfile == "deploy/Dockerfile") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// imageEnv is the ENV of deploy/Dockerfile's final stage: what every
// gateway container starts with before its service's environment.
func imageEnv(t *testing.T, dockerfile string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	env := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "FROM ") {
			env = map[string]string{} // a new stage starts empty
			continue
		}
		rest, ok := strings.CutPrefix(line, "ENV ")
		if !ok {
			continue
		}
		for _, kv := range strings.Fields(rest) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
	}
	if len(env) == 0 {
		t.Fatalf("%s: no ENV in the final stage", dockerfile)
	}
	return env
}

// hostPath maps a path inside a container to the host through its bind
// mounts (Source resolved on the host; the longest Target containing the
// path wins), or "" when no bind mount holds it.
func hostPath(mounts []mount, inside string) string {
	best, bestLen := "", -1
	for _, m := range mounts {
		if !m.Bind {
			continue
		}
		if inside == m.Target || strings.HasPrefix(inside, strings.TrimSuffix(m.Target, "/")+"/") {
			if len(m.Target) > bestLen {
				best, bestLen = filepath.Join(m.Source, strings.TrimPrefix(inside, m.Target)), len(m.Target)
			}
		}
	}
	return best
}
